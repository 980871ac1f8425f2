"""The LLM teacher's prompts: every worked example obeys the rules it teaches, every dataset and
question type gets examples and a note, and the rendered messages carry what the model needs."""

import dataclasses

import pytest

from efficientrag.synth.align import align_words
from efficientrag.synth.next_hop import filter_target
from efficientrag.synth.prompts import PROMPT_SETS, prompt_digest, prompt_set
from efficientrag.synth.prompts import instructions as ins
from efficientrag.synth.prompts.render import (
    STEPS_HEADER,
    TRIPLES_HEADER,
    DecomposeInput,
    decompose_messages,
    label_messages,
    next_hop_messages,
    shot_input,
)
from efficientrag.synth.records import SubQuestion, validate_decomposition
from efficientrag.text.words import split_words

SETS = sorted(PROMPT_SETS.items())
DECOMPOSE_SHOTS = [
    pytest.param(shot, id=f"{name}-{shape}-{n}")
    for name, ps in SETS
    for shape, shots in ps.shapes.items()
    for n, shot in enumerate(shots)
]
LABEL_SHOTS = [pytest.param(s, id=f"{name}-{n}") for name, ps in SETS for n, s in enumerate(ps.label)]
NEXT_HOP_SHOTS = [pytest.param(s, id=f"{name}-{n}") for name, ps in SETS for n, s in enumerate(ps.next_hop)]
TYPES = {
    "hotpotqa": ["bridge", "comparison"],
    "2wikimultihopqa": ["compositional", "inference", "comparison", "bridge_comparison"],
    "musique": ["2hop", "3hop1", "3hop2", "4hop1", "4hop2", "4hop3"],
    "generic": ["bridge", "compositional", "comparison", "bridge_comparison"],
}


@pytest.mark.parametrize("shot", DECOMPOSE_SHOTS)
def test_example_decompositions_are_valid(shot):
    subs = [
        SubQuestion(k, s.sub_question, s.answer, list(s.dependency), f"p{s.document}")
        for k, s in enumerate(shot.sub_questions, start=1)
    ]
    validate_decomposition(subs, [f"p{n}" for n in range(1, len(shot.paragraphs) + 1)])
    for s in shot.sub_questions:
        assert "#" not in s.sub_question  # earlier answers written out, as the instruction says
        title, text = shot.paragraphs[s.document - 1]
        assert s.answer.lower() in f"{title}: {text}".lower(), s
    assert not (shot.triples and shot.steps)
    for _, _, paragraph in shot.steps:
        assert 1 <= paragraph <= len(shot.paragraphs)


@pytest.mark.parametrize("shot", LABEL_SHOTS)
def test_example_labels_are_copied_in_order_from_the_paragraph(shot):
    chunk = split_words(f"{shot.paragraph[0]}: {shot.paragraph[1]}")
    al = align_words(split_words(shot.extracted_words), chunk, use_lemmas=False)
    assert al.rate == 1.0
    assert al.matched == sorted(al.matched)  # nothing reordered
    assert set(split_words(shot.answer)) <= set(split_words(shot.extracted_words))


@pytest.mark.parametrize("shot", NEXT_HOP_SHOTS)
def test_example_next_hop_queries_only_pick_words_in_order(shot):
    target = filter_target(
        split_words(shot.question),
        [split_words(info) for _, _, info in shot.answered],
        split_words(shot.filtered_query),
    )
    assert target.alignment.rate == 1.0
    matched = [m for m in target.alignment.matched if m is not None]
    assert matched == sorted(matched)
    for _, answer, _ in shot.answered:  # the found entity is carried to the next hop
        assert answer in shot.filtered_query


@pytest.mark.parametrize("dataset", sorted(TYPES))
def test_every_question_type_gets_its_examples_and_a_note(dataset):
    ps = PROMPT_SETS[dataset]
    for qtype in TYPES[dataset]:
        shots = ps.decompose_shots(qtype)
        assert shots and ps.type_note(qtype), qtype
        assert len({s.question for s in shots}) == len(shots)
    assert ps.decompose_shots("no-such-type") == [s for n in ps.default_shapes for s in ps.shapes[n]]
    assert ps.label and ps.next_hop


def test_dataset_names_pick_their_prompt_set_and_others_the_generic_one():
    assert prompt_set("hotpotqa").dataset == "hotpotqa"
    assert prompt_set("2wikimultihopqa").dataset == "2wikimultihopqa"
    assert prompt_set("MuSiQue").dataset == "musique"
    assert prompt_set("toy").dataset == "generic" and prompt_set("my_jsonl").dataset == "generic"


def test_decompose_messages_show_examples_then_the_record_with_its_annotations():
    ps = PROMPT_SETS["2wikimultihopqa"]
    inp = DecomposeInput(
        question="Who was born first, A or B?",
        answer="A",
        qtype="comparison",
        paragraphs=["A: A was born in 1900.", "B: B was born\nin 1910."],
        triples=[("A", "date of birth", "1900"), ("B", "date of birth", "1910")],
    )
    messages = decompose_messages(ps, inp)
    assert messages[0] == {"role": "system", "content": ins.DECOMPOSE}
    roles = [m["role"] for m in messages[1:]]
    assert roles == ["user", "assistant"] * len(ps.decompose_shots("comparison")) + ["user"]
    user = messages[-1]["content"]
    assert "Question type: comparison (" in user
    assert "[2] B: B was born in 1910." in user  # one line per paragraph
    assert f"{TRIPLES_HEADER}\n- A | date of birth | 1900\n- B | date of birth | 1910" in user
    assert "Final answer: A" in user
    # The examples are rendered exactly like a record.
    shot = ps.decompose_shots("comparison")[0]
    assert messages[1]["content"].startswith(f"Question: {shot.question}\nFinal answer: {shot.answer}")
    assert '"decomposed_questions"' in messages[2]["content"]


def test_steps_render_with_paragraph_numbers_when_known():
    ps = PROMPT_SETS["musique"]
    inp = DecomposeInput(
        "Q?", "x", "2hop", ["T: t", "U: u"], steps=[("X >> r", "y", 2), ("When was #1?", "x", None)]
    )
    user = decompose_messages(ps, inp)[-1]["content"]
    assert f"{STEPS_HEADER}\n1. X >> r -> y (paragraph 2)\n2. When was #1? -> x" in user
    # A MuSiQue 2hop record gets the chain examples; the shots carry the dataset's annotations too.
    assert STEPS_HEADER in decompose_messages(ps, shot_input(ps.shapes["2hop"][0]))[1]["content"]


def test_label_and_next_hop_messages():
    ps = PROMPT_SETS["hotpotqa"]
    label = label_messages(ps, "Who?", "Bo", "T: Bo did it.")
    assert label[0]["content"] == ins.LABEL and len(label) == 2 + 2 * len(ps.label)
    assert label[-1]["content"] == "Sub-question: Who?\nAnswer: Bo\nParagraph: T: Bo did it."
    hop = next_hop_messages(ps, "Where was the X of Y born?", [("Who is the X of Y?", "Bo", "X of Y Bo")])
    assert hop[0]["content"] == ins.NEXT_HOP
    assert hop[-1]["content"] == (
        "Question: Where was the X of Y born?\nAnswered: Who is the X of Y? -> Bo\nKnown information: X of Y Bo"
    )
    assert '"filtered_query"' in hop[2]["content"]


def test_prompt_digest_covers_the_examples(monkeypatch):
    before = prompt_digest()
    assert before == prompt_digest() and len(before) == 12
    ps = PROMPT_SETS["generic"]
    changed = dataclasses.replace(ps, label=ps.label[:1])
    monkeypatch.setitem(PROMPT_SETS, "generic", changed)
    prompt_digest.cache_clear()
    try:
        assert prompt_digest() != before
    finally:
        monkeypatch.setitem(PROMPT_SETS, "generic", ps)
        prompt_digest.cache_clear()


def test_the_examples_are_the_ones_every_llm_synthesis_run_was_bound_to():
    """The digest of the examples when they were written in Python (before issue 27 moved them to
    YAML). It is part of every LLM-teacher stage's params: changing it refuses resuming those runs,
    so a change must be deliberate (bump PROMPT_VERSION and this value together)."""
    assert prompt_digest() == "8f325b06a95e"
