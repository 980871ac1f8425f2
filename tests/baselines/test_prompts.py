import pytest

from efficientrag.baselines.decompose_r import parse_sub_questions
from efficientrag.baselines.prompts import EXEMPLARS, PromptLibrary
from efficientrag.baselines.prompts import instructions as ins
from efficientrag.baselines.prompts.config import PromptConfig
from efficientrag.baselines.self_ask import final_answer, follow_up_of, has_final
from efficientrag.data.schema import Example
from efficientrag.llm.answers import extract_answer
from efficientrag.llm.json_output import parse_json_output

FAMILIES = ("hotpotqa", "2wikimultihopqa", "musique", "toy", "generic")


def test_every_family_has_three_complete_exemplars():
    assert set(EXEMPLARS) == set(FAMILIES)
    for family, exemplars in EXEMPLARS.items():
        assert len(exemplars) == 3, family
        assert len({e.question for e in exemplars}) == 3
        for e in exemplars:
            # The reasoning ends by stating the answer, and the last step's answer leads to it.
            assert e.thought.endswith(f"So the answer is {e.answer}."), e.question
            assert all(q.endswith("?") and a for q, a in e.steps)


@pytest.mark.parametrize("family", FAMILIES)
def test_exemplar_replies_parse_back_to_their_answers(family):
    ps = PromptLibrary(PromptConfig(dataset=family)).for_dataset("anything")
    assert ps.dataset == family
    for e in ps.exemplars:
        for prompt in (
            ps.direct("Q?"),
            ps.cot("Q?"),
            ps.answer("Q?", ["T: x"]),
            ps.iter_retgen("Q?", ["T: x"]),
        ):
            block = prompt.split(f"Question: {e.question}\nAnswer: ", 1)[1].split("\n", 1)[0]
            assert extract_answer(block, "json") == e.answer
        block = ps.decompose("Q?").split(f"Question: {e.question}\nAnswer: ", 1)[1].split("\n", 1)[0]
        assert parse_sub_questions(block) == ([q for q, _ in e.steps], "json")
        scratch = ps.self_ask("Q?").split(f"Question: {e.question}\n", 1)[1].split("\n\n", 1)[0]
        lines = scratch.splitlines()
        follow_ups = [follow_up_of(line) for line in lines if line.startswith(ins.FOLLOW_UP)]
        assert follow_ups == [q for q, _ in e.steps]
        assert has_final(scratch) and extract_answer(scratch, "self_ask") == e.answer


def test_prompts_end_with_the_open_question_and_show_documents():
    ps = PromptLibrary().for_dataset("hotpotqa")
    prompt = ps.answer("Who wrote it?", ["Book: A novel by Ann.", "Ann: born   in\nRome."])
    assert prompt.startswith(ins.RETRIEVAL_ANSWER)
    assert prompt.endswith(
        "Documents:\n[1] Book: A novel by Ann.\n[2] Ann: born in Rome.\nQuestion: Who wrote it?\nAnswer:"
    )
    assert ps.answer("Q?", []).endswith("Documents:\n(no documents)\nQuestion: Q?\nAnswer:")
    assert ps.self_ask("Q?").endswith("Question: Q?\nAre follow up questions needed here:")
    assert ps.direct("Q?").count("Question:") == 4
    assert (
        PromptLibrary(PromptConfig(exemplars=0)).for_dataset("toy").direct("Q?")
        == f"{ins.DIRECT}\n\nQuestion: Q?\nAnswer:"
    )


def test_auto_family_follows_each_questions_dataset():
    lib = PromptLibrary()
    assert lib.for_example(Example("1", "q", ["a"], [], dataset="musique")).dataset == "musique"
    assert lib.for_example(Example("2", "q", ["a"], [], dataset="jsonl")).dataset == "generic"
    fixed = PromptLibrary(PromptConfig(dataset="2wiki"))
    assert fixed.for_example(Example("3", "q", ["a"], [], dataset="musique")).dataset == "2wikimultihopqa"
    with pytest.raises(ValueError, match="^dataset must be one of"):
        PromptConfig(dataset="nq")
    with pytest.raises(ValueError, match="exemplars"):
        PromptConfig(exemplars=4)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"decomposed_questions": ["A?", "B?"]}', (["A?", "B?"], "json")),
        (
            'Here:\n```json\n{"sub_questions": [{"question": "A?"}, {"question": "a?"}]}\n```',
            (["A?"], "json"),
        ),
        ('{"decomposed_questions": {"1": "A?", "2": "B?"}}', (["A?", "B?"], "json")),
        ('["A?", "B?"]', (["A?", "B?"], "json_list")),
        ("1. Who is A?\n2. Where was A born?\nDone.", (["Who is A?", "Where was A born?"], "lines")),
        ('{"decomposed_questions": []}', ([], "none")),
        ("I cannot do that", ([], "none")),
    ],
)
def test_parse_sub_questions(reply, expected):
    assert parse_sub_questions(reply) == expected


def test_self_ask_line_parsing():
    assert follow_up_of(" Yes.\nFollow up: Who is A?") == "Who is A?"
    assert follow_up_of("Follow up:   ") is None
    assert follow_up_of("Follow up: A?\nSo the final answer is: x") is None
    assert has_final("so the final answer is: x")
    assert final_answer("So the final answer is: St. Louis.\nQuestion").answer == "St. Louis"
    assert final_answer("Follow up: A?\nSo the final answer is:  ").answer == ""
    assert final_answer("So the final answer is: no. So the final answer is: yes").answer == "yes"


def test_exemplar_json_is_valid():
    ps = PromptLibrary().for_dataset("musique")
    for line in ps.cot("Q?").splitlines():
        if line.startswith("Answer: {"):
            obj = parse_json_output(line, expect=dict)
            assert set(obj) == {"thought", "answer"}


def test_a_document_prompt_shows_each_exemplar_with_its_own_documents():
    import json

    ps = PromptLibrary(PromptConfig(exemplars=1)).for_dataset("generic")
    (e,) = ps.exemplars
    docs = "\n".join(f"[{i}] {title}: {text}" for i, (title, text) in enumerate(e.documents, start=1))
    assert ps.iter_retgen("Q?", ["T: x"]) == (
        f"{ins.ITER_RETGEN}\n\nDocuments:\n{docs}\nQuestion: {e.question}\n"
        f"Answer: {json.dumps({'thought': e.thought, 'answer': e.answer})}\n\n"
        "Documents:\n[1] T: x\nQuestion: Q?\nAnswer:"
    )
    assert ps.decompose("Q?") == (
        f"{ins.DECOMPOSE}\n\nQuestion: {e.question}\n"
        f"Answer: {json.dumps({'decomposed_questions': [q for q, _ in e.steps]})}\n\nQuestion: Q?\nAnswer:"
    )
