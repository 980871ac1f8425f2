from efficientrag.data.split import TRAIN, VALIDATION, split_of
from efficientrag.models.inputs import FilterRow, LabelerRow
from efficientrag.synth.build import build_rows, write_sets
from efficientrag.training import load_training_set


def test_split_is_deterministic_seeded_and_near_the_ratio():
    ids = [f"q{i}" for i in range(2000)]
    sides = [split_of(q, validation_ratio=0.2, seed=1) for q in ids]
    assert sides == [split_of(q, validation_ratio=0.2, seed=1) for q in ids]
    assert 0.16 < sides.count(VALIDATION) / len(ids) < 0.24
    assert sides != [split_of(q, validation_ratio=0.2, seed=2) for q in ids]
    assert {split_of(q, validation_ratio=0.0) for q in ids} == {TRAIN}
    assert {split_of(q, validation_ratio=1.0) for q in ids} == {VALIDATION}


def records(n_questions):
    decomposed, aligned, next_hop, negatives = {}, {}, {}, {}
    for n in range(n_questions):
        qid = f"q{n}"
        decomposed[qid] = {
            "id": qid,
            "dataset": "toy",
            "type": "bridge",
            "sub_questions": [
                {"idx": 1, "sub_question": "s1", "answer": "A", "dependency": [], "chunk_id": "c1"},
                {"idx": 2, "sub_question": "s2", "answer": "B", "dependency": [1], "chunk_id": "c2"},
            ],
        }
        for idx in (1, 2):
            sid = f"{qid}#{idx}"
            aligned[sid] = {
                "chunk_id": f"c{idx}",
                "chunk_words": ["T", ":", "A", "B"],
                "labels": [0, 0, 1, 0],
            }
            next_hop[sid] = {"hop": idx, "query_words": ["Where", "?"]}
            if idx == 2:
                next_hop[sid].update(
                    filter_words=["Query", ":", "Where", "Info", ":", "A"], filter_labels=[0, 0, 1, 0, 0, 1]
                )
            if n % 3 != 0 or idx == 1:  # some sub-questions found no negative
                negatives[sid] = {
                    "negative_chunk_id": "c9",
                    "negative_rank": 2,
                    "negative_chunk_words": ["X", "Y", "Z"],
                }
    return decomposed, aligned, next_hop, negatives


def test_build_rows_split_by_question_and_load_with_datasets(tmp_path):
    decomposed, aligned, next_hop, negatives = records(40)
    built = build_rows(
        list(decomposed), decomposed, aligned, next_hop, negatives, validation_ratio=0.3, seed=0
    )
    lab = built.labeler[TRAIN] + built.labeler[VALIDATION]
    fil = built.filter[TRAIN] + built.filter[VALIDATION]
    assert sum(r["tag"] == "continue" for r in lab) == 80
    assert sum(r["tag"] == "terminate" for r in lab) == 80 - 14  # q0, q3, ..., q39 lack the hop-2 negative
    assert len(fil) == 40
    # No question on both sides, for either model.
    for rows in (built.labeler, built.filter):
        train_q = {r["question_id"] for r in rows[TRAIN]}
        val_q = {r["question_id"] for r in rows[VALIDATION]}
        assert train_q and val_q and not train_q & val_q
    neg = next(r for r in lab if r["tag"] == "terminate")
    assert neg["labels"] == [0, 0, 0] and neg["chunk_id"] == "c9" and neg["meta"]["rank"] == 2
    pos = next(r for r in lab if r["id"] == "q1#2/pos")
    assert pos["query_words"] == ["Where", "?"] and pos["labels"] == [0, 0, 1, 0] and pos["meta"]["hop"] == 2
    # Rows are valid model-input records.
    LabelerRow.from_dict(pos)
    FilterRow.from_dict(fil[0])

    files = write_sets(built, tmp_path)
    ds = load_training_set(tmp_path / "labeler")
    assert files["labeler/train"] == str(tmp_path / "labeler" / "train.jsonl")
    assert ds["train"].num_rows + ds["validation"].num_rows == len(lab)
    assert set(ds["train"].column_names) >= {"query_words", "chunk_words", "labels", "tag"}
    fds = load_training_set(tmp_path / "filter")
    assert fds["train"].num_rows + fds["validation"].num_rows == 40
    assert fds["train"][0]["labels"] == [0, 0, 1, 0, 0, 1]


def test_more_negatives_and_question_positives():
    decomposed, aligned, next_hop, negatives = records(3)
    for qid in decomposed:
        decomposed[qid]["question"] = "Where was it made ?"
        next_hop[f"{qid}#1"]["query_words"] = ["Where", "was", "it", "made", "?"]  # hop 1 asks the question
    negatives["q1#1"]["more_negatives"] = [
        {"negative_chunk_id": "c7", "negative_rank": 4, "negative_chunk_words": ["P", "Q"]},
        {"negative_chunk_id": "c8", "negative_rank": 5, "negative_chunk_words": ["R"]},
    ]
    built = build_rows(
        list(decomposed), decomposed, aligned, next_hop, negatives, validation_ratio=0.0, seed=0,
        question_positives=True,
    )  # fmt: skip
    rows = {r["id"]: r for r in built.labeler[TRAIN]}
    # Further negatives: one row each, same query, all-zero labels, their own rank.
    assert rows["q1#1/neg2"]["chunk_id"] == "c7" and rows["q1#1/neg3"]["labels"] == [0]
    assert rows["q1#1/neg2"]["meta"]["rank"] == 4 and rows["q1#1/neg2"]["tag"] == "terminate"
    assert "q2#1/neg2" not in rows
    # The later hop's gold chunk is also a positive for the original question, with its labels.
    qpos = rows["q1#2/qpos"]
    assert qpos["query_words"] == ["Where", "was", "it", "made", "?"] and qpos["tag"] == "continue"
    assert qpos["labels"] == rows["q1#2/pos"]["labels"] and qpos["chunk_id"] == "c2"
    # No extra positive where the hop's query already is the question (and none by default).
    assert sorted(rid for rid in rows if rid.endswith("/qpos")) == ["q0#2/qpos", "q1#2/qpos", "q2#2/qpos"]
    plain = build_rows(
        list(decomposed), decomposed, aligned, next_hop, negatives, validation_ratio=0.0, seed=0
    )
    assert not any(r["id"].endswith("/qpos") for r in plain.labeler[TRAIN])
