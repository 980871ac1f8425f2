import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.data.readers.wiki_context import join_sentences
from efficientrag.data.schema import Chunk, Example
from efficientrag.synth.records import Reject, validate_decomposition
from efficientrag.synth.teacher.annotations import AnnotationTeacher

KISS = [
    "Kiss and Tell (1945 film)",
    [
        "Kiss and Tell is a 1945 American comedy film starring then 17-year-old Shirley Temple as Corliss Archer.",
        " In the film, two teenage girls cause their respective parents much concern.",
    ],
]
TEMPLE = [
    "Shirley Temple",
    [
        "Shirley Temple Black (April 23, 1928 – February 10, 2014) was an American actress and diplomat.",
        " As an adult, she was named United States ambassador to Ghana and served as Chief of Protocol of the United States.",
    ],
]
DERRICKSON = [
    "Scott Derrickson",
    ["Scott Derrickson (born July 16, 1966) is an American director.", " He lives in Los Angeles."],
]
WOOD = [
    "Ed Wood",
    ["Edward Davis Wood Jr. (October 10, 1924 – December 10, 1978) was an American filmmaker."],
]
DISTRACTOR = ["Meet Corliss Archer", ["Meet Corliss Archer is a radio program."]]


def distractor(question, answer, qtype, context, facts):
    return {
        "_id": "h1",
        "question": question,
        "answer": answer,
        "type": qtype,
        "context": context,
        "supporting_facts": facts,
    }


def ircot(question, answer, context, gold_titles):
    return {
        "question_id": "h1",
        "question_text": question,
        "answers_objects": [{"spans": [answer]}],
        "contexts": [
            {"id": str(n), "title": t, "paragraph_text": " ".join(s), "is_supporting": t in gold_titles}
            for n, (t, s) in enumerate(context)
        ],
    }


def setup(raw, question, answer, context, gold_titles, qtype=""):
    chunks = [Chunk(f"c{n}", t, join_sentences(s)) for n, (t, s) in enumerate(context)]
    corpus = Corpus(chunks)
    gold = [c.id for c in chunks if c.title in gold_titles]
    ex = Example("h1", question, [answer], gold, qtype, "hotpotqa", [c.id for c in chunks], raw)
    return corpus, ex, AnnotationTeacher(corpus)


BRIDGE_Q = (
    "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
)


def bridge_case(fmt):
    context = [DISTRACTOR, TEMPLE, KISS]
    if fmt == "distractor":
        raw = distractor(
            BRIDGE_Q,
            "Chief of Protocol",
            "bridge",
            context,
            [["Kiss and Tell (1945 film)", 0], ["Shirley Temple", 1]],
        )
        return setup(
            raw,
            BRIDGE_Q,
            "Chief of Protocol",
            context,
            {"Kiss and Tell (1945 film)", "Shirley Temple"},
            "bridge",
        )
    raw = ircot(BRIDGE_Q, "Chief of Protocol", context, {"Kiss and Tell (1945 film)", "Shirley Temple"})
    return setup(raw, BRIDGE_Q, "Chief of Protocol", context, {"Kiss and Tell (1945 film)", "Shirley Temple"})


@pytest.mark.parametrize("fmt", ["distractor", "ircot"])
def test_bridge_hop_one_is_the_paragraph_mentioning_the_other_title(fmt):
    corpus, ex, teacher = bridge_case(fmt)
    d = teacher.decompose(ex)
    validate_decomposition(d.sub_questions, ex.gold_chunk_ids)
    s1, s2 = d.sub_questions
    assert d.type == "bridge"
    assert corpus.get(s1.chunk_id).title == "Kiss and Tell (1945 film)"
    assert s1.answer == "Shirley Temple" and s1.dependency == []
    assert (
        s1.sub_question == "Who or what is the woman who portrayed Corliss Archer in the film Kiss and Tell?"
    )
    assert s2.sub_question == "What government position was held by Shirley Temple?"
    assert s2.answer == "Chief of Protocol" and s2.dependency == [1]
    e1 = teacher.extract_words(ex, s1, corpus.get(s1.chunk_id))
    assert "Shirley" in e1.words and "Temple" in e1.words and "Corliss" in e1.words


def test_sentence_level_support_narrows_labels_to_supporting_sentences():
    context = [TEMPLE, KISS]
    facts = [["Kiss and Tell (1945 film)", 0], ["Shirley Temple", 1]]
    q = "What government position did the actress who played in Kiss and Tell hold as an American?"
    raw = distractor(q, "Chief of Protocol", "bridge", context, facts)
    corpus, ex, teacher = setup(
        raw, q, "Chief of Protocol", context, {"Kiss and Tell (1945 film)", "Shirley Temple"}, "bridge"
    )
    s2 = teacher.decompose(ex).sub_questions[1]
    e = teacher.extract_words(ex, s2, corpus.get(s2.chunk_id))
    # "American" is only in sentence 0, which is not a supporting sentence.
    assert "American" not in e.words
    assert e.words[-3:] == ["Chief", "of", "Protocol"]


def test_comparison_yes_no_falls_back_to_supporting_sentence_overlap():
    context = [DERRICKSON, WOOD]
    q = "Were Scott Derrickson and Ed Wood of the same nationality?"
    raw = distractor(q, "yes", "comparison", context, [["Scott Derrickson", 0], ["Ed Wood", 0]])
    corpus, ex, teacher = setup(raw, q, "yes", context, {"Scott Derrickson", "Ed Wood"}, "comparison")
    d = teacher.decompose(ex)
    validate_decomposition(d.sub_questions, ex.gold_chunk_ids)
    s1, s2 = d.sub_questions
    assert s1.dependency == [] and s2.dependency == []
    assert s1.sub_question == f"Regarding Scott Derrickson: {q}"
    e1 = teacher.extract_words(ex, s1, corpus.get(s1.chunk_id))
    assert e1.method == "overlap" and e1.words == ["Scott", "Derrickson"]
    e2 = teacher.extract_words(ex, s2, corpus.get(s2.chunk_id))
    assert e2.words == ["Wood"]


def test_ircot_type_is_inferred():
    context = [DERRICKSON, WOOD]
    q = "Were Scott Derrickson and Ed Wood of the same nationality?"
    corpus, ex, teacher = setup(
        ircot(q, "yes", context, {"Scott Derrickson", "Ed Wood"}),
        q,
        "yes",
        context,
        {"Scott Derrickson", "Ed Wood"},
    )
    assert teacher.decompose(ex).type == "comparison"
    corpus, ex, teacher = bridge_case("ircot")
    assert teacher.decompose(ex).type == "bridge"


def test_bridge_naming_both_titles_is_treated_as_comparison():
    context = [DERRICKSON, WOOD]
    q = "Who is older, Scott Derrickson or Ed Wood?"
    raw = distractor(q, "Ed Wood", "bridge", context, [["Scott Derrickson", 0], ["Ed Wood", 0]])
    corpus, ex, teacher = setup(raw, q, "Ed Wood", context, {"Scott Derrickson", "Ed Wood"}, "bridge")
    d = teacher.decompose(ex)
    assert d.type == "comparison" and all(not s.dependency for s in d.sub_questions)


def test_bridge_order_ambiguous_is_rejected():
    a = ["Alpha Band", ["Alpha Band is a rock band."]]
    b = ["Beta Records", ["Beta Records is a label."]]
    q = "Which label signed the group that toured in 1999?"
    raw = distractor(q, "Beta Records", "bridge", [a, b], [["Alpha Band", 0], ["Beta Records", 0]])
    corpus, ex, teacher = setup(raw, q, "Beta Records", [a, b], {"Alpha Band", "Beta Records"}, "bridge")
    with pytest.raises(Reject) as err:
        teacher.decompose(ex)
    assert err.value.reason == "bridge order ambiguous"
    assert "neither mentions" in err.value.detail


def test_bridge_tie_is_broken_by_the_title_the_question_names():
    a = ["Alpha Band", ["Alpha Band signed with Beta Records."]]
    b = ["Beta Records", ["Beta Records signed Alpha Band in 1990 and is based in Oslo."]]
    q = "Where is the label that signed Alpha Band based?"
    raw = distractor(q, "Oslo", "bridge", [a, b], [["Alpha Band", 0], ["Beta Records", 0]])
    corpus, ex, teacher = setup(raw, q, "Oslo", [a, b], {"Alpha Band", "Beta Records"}, "bridge")
    s1, s2 = teacher.decompose(ex).sub_questions
    assert corpus.get(s1.chunk_id).title == "Alpha Band"
    assert s1.answer == "Beta Records"


def test_not_two_gold_paragraphs_is_rejected():
    context = [DERRICKSON, WOOD, KISS]
    q = "q?"
    raw = distractor(
        q,
        "yes",
        "comparison",
        context,
        [["Scott Derrickson", 0], ["Ed Wood", 0], ["Kiss and Tell (1945 film)", 0]],
    )
    corpus, ex, teacher = setup(
        raw, q, "yes", context, {"Scott Derrickson", "Ed Wood", "Kiss and Tell (1945 film)"}, "comparison"
    )
    with pytest.raises(Reject) as err:
        teacher.decompose(ex)
    assert err.value.reason == "not two gold paragraphs"


def test_unknown_record_format_is_rejected():
    corpus, ex, teacher = bridge_case("distractor")
    ex.raw = {"something": "else"}
    with pytest.raises(Reject) as err:
        teacher.decompose(ex)
    assert err.value.reason == "unsupported record format"
