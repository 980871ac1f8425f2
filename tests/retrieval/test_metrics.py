import pytest

from efficientrag.retrieval.metrics import (
    answer_contained,
    mean_scores,
    oracle_recall,
    score_at_ks,
    score_retrieval,
)


def test_oracle_recall_counts_unique_gold():
    assert oracle_recall(["a", "x", "a"], ["a", "b"]) == 0.5
    assert oracle_recall(["b", "a"], ["a", "b"]) == 1.0
    with pytest.raises(ValueError):
        oracle_recall(["a"], [])


def test_score_retrieval_counts_duplicates_separately():
    s = score_retrieval(["a", "x", "a", "b"], ["t1", "t2", "t1", "t3"], ["a", "b"], ["zzz"])
    assert s.recall == 1.0 and s.all_gold
    assert s.num_chunks == 3 and s.num_chunks_with_dups == 4
    assert not s.answer_recall


def test_prefix_scores_by_hand():
    ranked = ["x", "a", "y", "b"]
    texts = ["nothing", "The Chief of Protocol.", "no", "yes"]
    by_k = score_at_ks(ranked, texts, ["a", "b"], ["chief of protocol"], [1, 2, 4])
    assert by_k[1].recall == 0.0 and not by_k[1].answer_recall
    assert by_k[2].recall == 0.5 and by_k[2].answer_recall and not by_k[2].all_gold
    assert by_k[4].recall == 1.0 and by_k[4].all_gold


def test_answer_containment_uses_squad_normalization():
    assert answer_contained(["It was the U.S.A, said Bob"], ["usa"])
    assert not answer_contained(["unrelated"], ["usa"])
    assert not answer_contained(["anything"], [""])


def test_mean_scores_percent():
    a = score_retrieval(["a"], ["t"], ["a", "b"], ["t"])
    b = score_retrieval(["a", "b"], ["t", "u"], ["a", "b"], ["q"])
    m = mean_scores([a, b])
    assert m["recall"] == pytest.approx(75.0) and m["all_gold"] == pytest.approx(50.0)
    assert m["answer_recall"] == pytest.approx(50.0) and m["num_chunks"] == 1.5
