"""The part of every dev sample held back from design: a fixed hash of the id, about 30%."""

from efficientrag.data.split import HELD_BACK_RATIO, TRAIN, VALIDATION, held_back, split_of


def test_held_back_is_a_fixed_share_of_ids_that_never_moves():
    ids = [f"q{i}" for i in range(5000)]
    share = sum(map(held_back, ids)) / len(ids)
    assert abs(share - HELD_BACK_RATIO) < 0.03
    # sha256 of the seed and the id: the same questions on every machine and in every run.
    assert [held_back(i) for i in ("2hop__a", "2hop__b", "3hop1__c", "3hop2__d")] == [
        False,
        False,
        False,
        True,
    ]


def test_the_held_back_part_is_not_the_training_files_validation_split():
    ids = [f"q{i}" for i in range(2000)]
    validation = {i for i in ids if split_of(i, validation_ratio=0.3, seed=0) == VALIDATION}
    kept = {i for i in ids if held_back(i)}
    assert kept != validation and 0.2 < len(kept & validation) / len(kept) < 0.4
    assert {split_of(i, validation_ratio=0.0) for i in ids} == {TRAIN}
