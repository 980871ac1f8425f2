"""Mixing adaptation rows into the original training set, and self-training rows from decisions."""

from __future__ import annotations

import json

import pytest

from efficientrag.adapt.mix import MixConfig, mix_training_sets
from efficientrag.adapt.self_training import (
    SelfTrainConfig,
    read_questions,
    record_decisions,
    rows_from_decisions,
)
from efficientrag.errors import DataFormatError
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.models.inputs import FilterRow, LabelerRow
from efficientrag.synth.merge import merge_training_sets
from efficientrag.testing.scripted_models import ALPHA_QUESTION, OMEGA_QUESTION, scripted_rag


def _lab(qid, i, tag="continue"):
    return LabelerRow(f"{qid}#{i}", qid, ["q"], ["w", "x"], [1, 0], tag).to_dict()


def _fil(qid, i):
    return FilterRow(f"{qid}#f{i}", qid, ["Query", ":", "a"], [0, 0, 1]).to_dict()


def _write_set(folder, questions, rows_per_question):
    for part, qs in (("train", questions), ("validation", [f"v{q}" for q in questions[:2]])):
        write_jsonl(
            folder / "labeler" / f"{part}.jsonl",
            [_lab(f"{folder.name}{q}", i) for q in qs for i in range(rows_per_question)],
        )
        write_jsonl(folder / "filter" / f"{part}.jsonl", [_fil(f"{folder.name}{q}", 0) for q in qs])
    return folder


def test_mix_adds_whole_questions_at_the_ratio_from_each_source(tmp_path):
    original = _write_set(tmp_path / "orig", list("abcd"), 2)  # 8 labeler rows
    pseudo = _write_set(tmp_path / "pseudo", [str(i) for i in range(20)], 3)  # 60
    selfrows = _write_set(tmp_path / "self", [str(i) for i in range(2)], 3)  # 6: fewer than asked
    counts = mix_training_sets(original, [pseudo, selfrows], tmp_path / "mix", MixConfig(labeler_ratio=0.5))
    rows = list(read_jsonl(tmp_path / "mix" / "labeler" / "train.jsonl"))
    assert counts["labeler"]["train"] == {"original": 8, "adaptation": len(rows) - 8}
    by_source = {}
    for r in rows:
        by_source.setdefault(r["question_id"].rstrip("0123456789abcd"), []).append(r)
    assert len(by_source["orig"]) == 8
    # 0.5 x 8 = 4 rows asked from each source: whole questions of 3 rows, so 6 from pseudo.
    assert len(by_source["pseudo"]) == 6 and len({r["question_id"] for r in by_source["pseudo"]}) == 2
    assert len(by_source["self"]) == 6
    again = mix_training_sets(original, [pseudo, selfrows], tmp_path / "mix2", MixConfig(labeler_ratio=0.5))
    assert again == counts
    assert (tmp_path / "mix2" / "labeler" / "train.jsonl").read_bytes() == (
        tmp_path / "mix" / "labeler" / "train.jsonl"
    ).read_bytes()
    none = mix_training_sets(
        original, [pseudo], tmp_path / "mix3", MixConfig(labeler_ratio=0.0, filter_ratio=0.0)
    )
    assert none["labeler"]["train"]["adaptation"] == 0 and none["filter"]["validation"]["adaptation"] == 0


def test_mix_refuses_a_row_id_seen_twice_and_a_missing_file(tmp_path):
    original = _write_set(tmp_path / "orig", list("ab"), 1)
    with pytest.raises(ValueError, match="also in"):
        mix_training_sets(original, [original], tmp_path / "mix", MixConfig(ratios=[1.0]))
    with pytest.raises(FileNotFoundError, match="missing"):
        mix_training_sets(original, [tmp_path / "nothing"], tmp_path / "mix", MixConfig(ratios=[1.0]))


def _decision(qid, pairs, filters=()):
    return {
        "id": qid,
        "question": f"question {qid}?",
        "labeler": [{"query": ["q"], "chunk": ["a", "b", "c"], "p": p, "words": words} for p, words in pairs],
        "filter": [{"words": ["Query", ":", "x", "Info", ":", "y"], "probs": probs} for probs in filters],
    }


def test_only_confident_decisions_become_rows(tmp_path):
    path = tmp_path / "decisions.jsonl"
    write_jsonl(
        path,
        [
            _decision(
                "q1",
                [(0.9, [0.8, 0.2, 0.6]), (0.3, [0.9, 0.9, 0.9]), (0.01, [0.7, 0.1, 0.1]), (0.005, [0, 0, 0])],
                [[0.0, 0.01, 0.99, 0.0, 0.02, 0.97], [0.0, 0.0, 0.6, 0.0, 0.0, 0.9]],
            ),
            # No confident Continue: at most terminate_per_continue Terminate rows, the surest.
            _decision("q2", [(0.02, [0, 0, 0]), (0.001, [0, 0, 0]), (0.015, [0, 0, 0])]),
        ],
    )
    cfg = SelfTrainConfig(
        agreement="none",
        continue_threshold=0.5,
        terminate_threshold=0.02,
        token_threshold=0.5,
        filter_confidence=0.9,
        terminate_per_continue=2,
        validation_ratio=0.0,
    )
    labeler, filt, counts = rows_from_decisions(path, cfg)
    rows = labeler["train"]
    q1 = [r for r in rows if r["question_id"] == "self/q1"]
    assert [(r["tag"], r["labels"]) for r in q1] == [
        ("continue", [1, 0, 1]),
        ("terminate", [0, 0, 0]),
        ("terminate", [0, 0, 0]),
    ]
    q2 = [r for r in rows if r["question_id"] == "self/q2"]
    assert len(q2) == 2 and all(r["tag"] == "terminate" for r in q2)
    # The surest two (0.001, 0.015) of q2's three.
    assert counts == {
        "questions": 2,
        "labeler_pairs": 7,
        "continue_rows": 1,
        "terminate_rows": 4,
        "filter_calls": 2,
        "filter_rows": 1,
    }
    assert [r["labels"] for r in filt["train"]] == [[0, 0, 1, 0, 0, 1]]
    with pytest.raises(ValueError, match="terminate_threshold"):
        SelfTrainConfig(continue_threshold=0.1, terminate_threshold=0.2)
    with pytest.raises(ValueError, match="rounds"):
        SelfTrainConfig(rounds=0)


def test_read_questions_skips_bad_records_and_refuses_a_file_without_any(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"id": "a", "question": "Who?"},
                {"id": "b"},
                {"id": "a", "question": "Again?"},
                {"question": "No id?"},
                {"id": "z", "question": "\u200b"},
                {"id": "s", "question": "Who is \ud800?"},
            ]
        )
    )
    questions, skipped = read_questions(path)
    assert [(q.id, q.question) for q in questions] == [("a", "Who?"), ("line4", "No id?")]
    assert [(s["line"], s["field"]) for s in skipped] == [
        (2, "question"),
        (3, "id"),
        (5, "question"),
        (6, "question"),
    ]
    assert skipped[2]["reason"] == "missing or empty" and "lone surrogate" in skipped[3]["reason"]
    txt = tmp_path / "q.txt"
    txt.write_text("First question?\n\n  Second?  \n")
    assert [q.question for q in read_questions(txt)[0]] == ["First question?", "Second?"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "no question key"}) + "\n")
    with pytest.raises(DataFormatError, match="no usable question"):
        read_questions(bad)


def test_decisions_are_recorded_per_question_and_a_rerun_only_runs_the_missing(tmp_path):
    from efficientrag.adapt.self_training import Question

    rag = scripted_rag()
    out = tmp_path / "decisions.jsonl"
    alpha, omega = Question("alpha", ALPHA_QUESTION), Question("omega", OMEGA_QUESTION)
    assert record_decisions(rag, [alpha], out, progress=False) == 1
    assert record_decisions(rag, [alpha, omega], out, progress=False) == 1
    records = list(read_jsonl(out))
    assert [r["id"] for r in records] == ["alpha", "omega"]
    alpha_rec = records[0]
    # The scripted Labeler says Continue (0.9) on the Alpha chunk for the question, with its words.
    chunk_first = {tuple(p["query"]): p for p in alpha_rec["labeler"] if p["chunk"][0] == "Alpha"}
    pair = next(iter(chunk_first.values()))
    assert pair["p"] == 0.9
    assert [w for w, x in zip(pair["chunk"], pair["words"], strict=True) if x >= 0.5] == ["Bob", "Stone"]
    # The Filter's inputs hold the labeled words as Info; the next hop asked about Bob Stone.
    assert any(call["words"][-2:] == ["Bob", "Stone"] for call in alpha_rec["filter"])
    assert any(p["chunk"][0] == "Bob" and p["p"] == 0.7 for p in alpha_rec["labeler"])
    # Both questions in one batch (one model call per hop for both): each decision still lands on
    # its own question, exactly as when they ran one at a time.
    batched = tmp_path / "batched.jsonl"
    assert record_decisions(rag, [alpha, omega], batched, batch_size=2, progress=False) == 2
    assert list(read_jsonl(batched)) == records
    assert records[0]["labeler"] != records[1]["labeler"]


def test_merge_unions_synthesis_runs_and_names_both_files_for_a_repeated_question(tmp_path):
    a = _write_set(tmp_path / "a", list("ab"), 2)
    b = _write_set(tmp_path / "b", list("cde"), 1)
    counts = merge_training_sets([a, b], tmp_path / "union")
    assert counts == {"labeler": {"train": 7, "validation": 6}, "filter": {"train": 5, "validation": 4}}
    ids = [r["id"] for r in read_jsonl(tmp_path / "union" / "labeler" / "train.jsonl")]
    assert ids[:4] == [r["id"] for r in read_jsonl(a / "labeler" / "train.jsonl")]
    with pytest.raises(
        ValueError, match=r"a[/\\]labeler[/\\]train.jsonl: row id .* is also in .*a[/\\]labeler"
    ):
        merge_training_sets([a, a], tmp_path / "twice")
    with pytest.raises(FileNotFoundError, match="run the synthesis 'build' stage"):
        merge_training_sets([a, tmp_path / "nothing"], tmp_path / "missing")


def test_stage_seconds_add_up_over_the_runs_that_worked_on_a_stage(tmp_path):
    from efficientrag.adapt.job import stage_seconds

    stage = tmp_path / "corpus-abc"
    assert stage_seconds(stage, 12.5) == 12.5  # made here (the folder did not exist yet)
    assert stage_seconds(stage, 0.25) == 12.75  # a rerun that found it done adds its instant
    assert stage_seconds(tmp_path / "other", 3.0) == 3.0  # kept per stage folder
