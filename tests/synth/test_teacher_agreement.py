"""Comparing two teachers' synthesis output: word-label agreement and bridge entities."""

from __future__ import annotations

import json

from efficientrag.synth.teacher_agreement import bridge_entities, bridge_share, label_agreement


def _write(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _aligned(qid, chunk, words, labels):
    return {"question_id": qid, "chunk_id": chunk, "chunk_words": words, "labels": labels}


def test_label_agreement_counts_words_on_pairs_both_teachers_kept(tmp_path):
    words = ["Paris", "is", "in", "France"]
    _write(
        tmp_path / "ref" / "aligned.jsonl",
        [
            _aligned("q1", "c1", words, [1, 0, 0, 1]),
            _aligned("q2", "c2", words, [1, 0, 0, 0]),
            _aligned("q3", "c3", words, [1, 1, 1, 1]),
        ],
    )
    _write(
        tmp_path / "llm" / "aligned.jsonl",
        [
            _aligned("q1", "c1", words, [1, 1, 0, 0]),  # tp 1, fp 1, fn 1
            _aligned("q2", "c2", words, [1, 0, 0, 0]),  # identical: tp 1
            _aligned("q3", "c3", ["other", "words"], [0, 0]),  # chunk text differs: not comparable
            _aligned("q4", "c4", words, [1, 1, 1, 1]),  # the reference did not keep it
        ],
    )
    got = label_agreement(tmp_path / "llm", tmp_path / "ref")
    assert got["pairs"] == 2
    assert got["precision"] == 2 / 3 and got["recall"] == 2 / 3
    assert abs(got["f1"] - 2 / 3) < 1e-12
    assert got["exact"] == 0.5
    assert label_agreement(tmp_path / "missing", tmp_path / "ref")["pairs"] == 0


def test_bridge_share_looks_for_the_dependency_answer_in_the_next_hop_query(tmp_path):
    decomposed = [
        {
            "id": "q1",
            "sub_questions": [
                {"idx": 1, "answer": "The Beatles", "dependency": []},
                {"idx": 2, "answer": "1960", "dependency": [1]},
            ],
        },
        {
            "id": "q2",
            "sub_questions": [
                {"idx": 1, "answer": "Ann", "dependency": []},
                {"idx": 2, "answer": "x", "dependency": [1]},
            ],
        },
        {
            "id": "q3",
            "sub_questions": [{"idx": 1, "answer": "", "dependency": []}, {"idx": 2, "dependency": [1]}],
        },
    ]
    assert bridge_entities(decomposed) == {"q1#2": ["The Beatles"], "q2#2": ["Ann"], "q3#2": [""]}
    _write(tmp_path / "decomposed.jsonl", decomposed)
    _write(
        tmp_path / "next_hop.jsonl",
        [
            {"id": "q1#1", "query": "who formed the band"},  # first hop: no bridge to carry
            {"id": "q1#2", "filtered_query": "When was beatles formed? the Beatles,"},
            {"id": "q2#2", "query": "Where did Annie live?"},  # "Ann" only inside another word
            {"id": "q3#2", "query": "anything"},  # no bridge answer known: not counted
        ],
    )
    assert bridge_share(tmp_path) == {"queries": 2, "with_bridge": 1, "share": 0.5}
