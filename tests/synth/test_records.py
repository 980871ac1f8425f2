import pytest

from efficientrag.synth.records import (
    DecomposedRecord,
    Reject,
    SubQuestion,
    dependency_order,
    question_id_of,
    sub_question_id,
    validate_decomposition,
)


def subs(*deps, chunks=None):
    chunks = chunks or [f"c{i}" for i in range(1, len(deps) + 1)]
    return [
        SubQuestion(i, f"q{i}?", f"a{i}", list(d), c)
        for i, (d, c) in enumerate(zip(deps, chunks, strict=True), start=1)
    ]


def reason(sub_questions, gold):
    with pytest.raises(Reject) as err:
        validate_decomposition(sub_questions, gold)
    return err.value.reason, err.value.detail


def test_a_valid_chain_passes():
    validate_decomposition(subs([], [1], [2]), ["c3", "c1", "c2"])


def test_one_sub_question_per_gold_chunk():
    assert reason(subs([], []), ["c1", "c2", "c3"])[0] == "sub-questions do not match gold chunks"
    assert "c3" in reason(subs([], []), ["c1", "c2", "c3"])[1]
    assert reason(subs([], [], chunks=["c1", "c1"]), ["c1"]) == (
        "sub-questions do not match gold chunks",
        "chunk(s) ['c1'] answer more than one sub-question",
    )
    assert (
        reason(subs([], [], chunks=["c1", "x"]), ["c1", "c2"])[0] == "sub-questions do not match gold chunks"
    )
    assert reason([], ["c1"])[0] == "sub-questions do not match gold chunks"


def test_dependencies_in_range_and_acyclic():
    assert reason(subs([], [3]), ["c1", "c2"])[0] == "invalid dependency"
    assert reason(subs([2], [1]), ["c1", "c2"]) == (
        "invalid dependency",
        "dependency cycle through sub-question 1",
    )
    assert reason(subs([1]), ["c1"])[0] == "invalid dependency"
    bad_idx = subs([], [])
    bad_idx[1].idx = 5
    assert reason(bad_idx, ["c1", "c2"])[0] == "invalid dependency"


def test_empty_answers_are_rejected():
    s = subs([], [1])
    s[1].answer = "  "
    assert reason(s, ["c1", "c2"]) == ("empty sub-question or answer", "sub-question 2")


def test_dependency_order_puts_dependencies_first():
    ordered = dependency_order(subs([3], [], [2]))
    assert [s.idx for s in ordered] == [2, 3, 1]


def test_record_round_trip_and_ids():
    rec = DecomposedRecord("q1", "Q?", ["A"], "musique", "2hop", "annotations", subs([], [1]))
    rec.sub_questions[0].answer_parts = ["x", "y"]
    d = rec.to_dict()
    assert "answer_parts" in d["sub_questions"][0] and "answer_parts" not in d["sub_questions"][1]
    assert DecomposedRecord.from_dict(d) == rec
    assert sub_question_id("a#b", 2) == "a#b#2"
    assert question_id_of("a#b#2") == "a#b"
    assert rec.sub_questions[0].answers() == ["x", "y"] and rec.sub_questions[1].answers() == ["a2"]
