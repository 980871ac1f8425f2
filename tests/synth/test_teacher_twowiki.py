import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.data.readers.wiki_context import join_sentences
from efficientrag.data.schema import Chunk, Example
from efficientrag.synth.records import Reject, validate_decomposition
from efficientrag.synth.teacher.annotations import AnnotationTeacher

CONTEXT = [
    [
        "The House by the Cemetery",
        ["The House by the Cemetery is a 1981 Italian horror film directed by Lucio Fulci."],
    ],
    [
        "Charlie Chan in Honolulu",
        ["Charlie Chan in Honolulu is a 1939 American film directed by H. Bruce Humberstone."],
    ],
    [
        "Lucio Fulci",
        ["Lucio Fulci( 17 June 1927 – 13 March 1996) was an Italian film director.", " He was born in Rome."],
    ],
    [
        "H. Bruce Humberstone",
        [
            "H. Bruce Humberstone( November 18, 1901 – October 11, 1984) was a film director.",
            " He directed many films.",
        ],
    ],
    ["Charlie Chan in London", ["Charlie Chan in London is a 1934 film."]],
]


def wiki_record(qtype, question, answer, evidences, supporting_facts, context=CONTEXT):
    return {
        "_id": "w1",
        "type": qtype,
        "question": question,
        "context": context,
        "supporting_facts": supporting_facts,
        "evidences": evidences,
        "answer": answer,
    }


def setup(raw):
    chunks = [Chunk(f"c{n}", t, join_sentences(s)) for n, (t, s) in enumerate(raw["context"])]
    corpus = Corpus(chunks)
    titles = list(dict.fromkeys(t for t, _ in raw["supporting_facts"]))
    gold = [c.id for t in titles for c in chunks if c.title == t]
    ex = Example(raw["_id"], raw["question"], [raw["answer"]], gold, raw["type"], "2wikimultihopqa", [], raw)
    return corpus, ex, AnnotationTeacher(corpus)


BRIDGE_COMPARISON = wiki_record(
    "bridge_comparison",
    "Which film has the director born earlier, The House By The Cemetery or Charlie Chan In Honolulu?",
    "Charlie Chan In Honolulu",
    [
        ["The House by the Cemetery", "director", "Lucio Fulci"],
        ["Charlie Chan in Honolulu", "director", "H. Bruce Humberstone"],
        ["Lucio Fulci", "date of birth", "17 June 1927"],
        ["H. Bruce Humberstone", "date of birth", "November 18, 1901"],
    ],
    [
        ["The House by the Cemetery", 0],
        ["Charlie Chan in Honolulu", 0],
        ["Lucio Fulci", 0],
        ["H. Bruce Humberstone", 0],
    ],
)


def test_bridge_comparison_gives_two_chains():
    corpus, ex, teacher = setup(BRIDGE_COMPARISON)
    d = teacher.decompose(ex)
    validate_decomposition(d.sub_questions, ex.gold_chunk_ids)
    subs = d.sub_questions
    assert [s.sub_question for s in subs] == [
        "Who directed The House by the Cemetery?",
        "Who directed Charlie Chan in Honolulu?",
        "When was Lucio Fulci born?",
        "When was H. Bruce Humberstone born?",
    ]
    assert [s.dependency for s in subs] == [[], [], [1], [2]]
    assert [s.answer for s in subs] == [
        "Lucio Fulci",
        "H. Bruce Humberstone",
        "17 June 1927",
        "November 18, 1901",
    ]
    assert [corpus.get(s.chunk_id).title for s in subs] == [
        "The House by the Cemetery",
        "Charlie Chan in Honolulu",
        "Lucio Fulci",
        "H. Bruce Humberstone",
    ]
    assert d.type == "bridge_comparison"


def test_triples_on_one_paragraph_become_one_sub_question_with_answer_parts():
    raw = wiki_record(
        "comparison",
        "Who lived longer, Lucio Fulci or H. Bruce Humberstone?",
        "H. Bruce Humberstone",
        [
            ["Lucio Fulci", "date of birth", "17 June 1927"],
            ["Lucio Fulci", "date of death", "13 March 1996"],
            ["H. Bruce Humberstone", "date of birth", "November 18, 1901"],
            ["H. Bruce Humberstone", "date of death", "October 11, 1984"],
        ],
        [["Lucio Fulci", 0], ["H. Bruce Humberstone", 0]],
    )
    corpus, ex, teacher = setup(raw)
    d = teacher.decompose(ex)
    validate_decomposition(d.sub_questions, ex.gold_chunk_ids)
    s1, s2 = d.sub_questions
    assert s1.sub_question == "What are the date of birth and date of death of Lucio Fulci?"
    assert s1.answer_parts == ["17 June 1927", "13 March 1996"] and s1.dependency == []
    e = teacher.extract_words(ex, s1, corpus.get(s1.chunk_id))
    assert e.words == ["Lucio", "Fulci", "17", "June", "1927", "13", "March", "1996"]


def test_compositional_chain_depends_on_the_object_that_is_the_next_subject():
    raw = wiki_record(
        "compositional",
        "When was the director of The House By The Cemetery born?",
        "17 June 1927",
        [
            ["The House by the Cemetery", "director", "Lucio Fulci"],
            ["Lucio Fulci", "date of birth", "17 June 1927"],
        ],
        [["The House by the Cemetery", 0], ["Lucio Fulci", 0]],
    )
    corpus, ex, teacher = setup(raw)
    s1, s2 = teacher.decompose(ex).sub_questions
    assert s2.dependency == [1]
    e1 = teacher.extract_words(ex, s1, corpus.get(s1.chunk_id))
    assert e1.words == ["House", "Cemetery", "directed", "Lucio", "Fulci"]


def test_unknown_relation_gets_the_generic_question_and_object_locates_the_paragraph():
    raw = wiki_record(
        "inference",
        "Who is the mentor of the director of Charlie Chan In London?",
        "x",
        # Subject "Humberstone" is not a title: the paragraph is found by the object.
        [["Humberstone", "notable work", "many films"]],
        [["H. Bruce Humberstone", 1]],
    )
    corpus, ex, teacher = setup(raw)
    (s1,) = teacher.decompose(ex).sub_questions
    assert s1.sub_question == "What is the notable work of Humberstone?"
    assert corpus.get(s1.chunk_id).title == "H. Bruce Humberstone"


def test_reformatted_date_is_found_in_any_order():
    raw = dict(BRIDGE_COMPARISON)
    raw["evidences"] = [list(e) for e in raw["evidences"]]
    raw["evidences"][3] = ["H. Bruce Humberstone", "date of birth", "18 November 1901"]
    corpus, ex, teacher = setup(raw)
    s4 = teacher.decompose(ex).sub_questions[3]
    e = teacher.extract_words(ex, s4, corpus.get(s4.chunk_id))
    assert e.method == "answer-unordered"
    assert [w for w in e.words if w in {"November", "18", "1901"}] == ["November", "18", "1901"]


def test_supporting_sentence_decides_between_two_occurrences():
    context = [
        ["Lucio Fulci", ["Lucio Fulci was born in Rome.", " Lucio Fulci worked in Rome for decades."]],
    ]
    raw = wiki_record(
        "compositional",
        "Where did Lucio Fulci work?",
        "Rome",
        [["Lucio Fulci", "work location", "Rome"]],
        [["Lucio Fulci", 1]],
        context,
    )
    corpus, ex, teacher = setup(raw)
    (s1,) = teacher.decompose(ex).sub_questions
    e = teacher.extract_words(ex, s1, corpus.get(s1.chunk_id))
    chunk_words = corpus.get(s1.chunk_id).contents.split()
    assert e.chunk_word_indices[-1] > len(chunk_words) // 2  # the Rome of sentence 1, not sentence 0
    assert e.words == ["Lucio", "Fulci", "Rome"]


def test_evidence_without_a_gold_paragraph_is_rejected():
    raw = wiki_record(
        "compositional",
        "q?",
        "a",
        [["Nobody", "father", "Somebody Else"]],
        [["Lucio Fulci", 0]],
    )
    corpus, ex, teacher = setup(raw)
    with pytest.raises(Reject) as err:
        teacher.decompose(ex)
    assert err.value.reason == "sub-question without gold paragraph"


def test_malformed_evidence_is_rejected():
    raw = wiki_record("compositional", "q?", "a", [["only two", "fields"]], [["Lucio Fulci", 0]])
    corpus, ex, teacher = setup(raw)
    with pytest.raises(Reject) as err:
        teacher.decompose(ex)
    assert err.value.reason == "malformed record"


# Records of the public train slices carry no evidence triples (evidences: null): the
# decomposition then comes from the supporting-fact paragraphs.


def test_without_evidences_bridge_comparison_is_two_bridges_from_the_supporting_facts():
    raw = dict(BRIDGE_COMPARISON, evidences=None)
    corpus, ex, teacher = setup(raw)
    d = teacher.decompose(ex)
    validate_decomposition(d.sub_questions, ex.gold_chunk_ids)
    subs = d.sub_questions
    assert [corpus.get(s.chunk_id).title for s in subs] == [
        "The House by the Cemetery",
        "Lucio Fulci",
        "Charlie Chan in Honolulu",
        "H. Bruce Humberstone",
    ]
    assert [s.dependency for s in subs] == [[], [1], [], [3]]
    # Hop 1 answers with the entity its paragraph names; hop 2 with the question's answer.
    assert [s.answer for s in subs] == [
        "Lucio Fulci",
        "Charlie Chan In Honolulu",
        "H. Bruce Humberstone",
        "Charlie Chan In Honolulu",
    ]
    assert subs[1].sub_question.startswith("Regarding Lucio Fulci:") and d.type == "bridge_comparison"


def test_without_evidences_compositional_is_a_bridge_with_the_relation_moved_to_hop_one():
    context = [
        ["Kuru Kuru", ["Kuru Kuru is a 1999 film directed by Lucio Fulci."]],
        CONTEXT[2],
        ["Noise", ["Noise is a band."]],
    ]
    raw = wiki_record(
        "compositional",
        "Where was the director of film Kuru Kuru born?",
        "Rome",
        None,
        [["Kuru Kuru", 0], ["Lucio Fulci", 1]],
        context=context,
    )
    corpus, ex, teacher = setup(raw)
    s1, s2 = teacher.decompose(ex).sub_questions
    assert (s1.sub_question, s1.answer, s1.dependency) == (
        "Who or what is the director of film Kuru Kuru?",
        "Lucio Fulci",
        [],
    )
    assert (s2.sub_question, s2.answer, s2.dependency) == ("Where was Lucio Fulci born?", "Rome", [1])
    assert corpus.get(s2.chunk_id).title == "Lucio Fulci"


def test_without_evidences_a_possessive_relation_goes_to_hop_one():
    context = [
        ["Mina Vale", ["Mina Vale is a politician, the daughter of Rune Vale."]],
        ["Rune Vale", ["Rune Vale( born 13 June 1946) is a politician."]],
    ]
    raw = wiki_record(
        "compositional",
        "What is the date of birth of Mina Vale's father?",
        "13 June 1946",
        None,
        [["Mina Vale", 0], ["Rune Vale", 0]],
        context=context,
    )
    _, ex, teacher = setup(raw)
    s1, s2 = teacher.decompose(ex).sub_questions
    assert s1.sub_question == "Who or what is Mina Vale's father?" and s1.answer == "Rune Vale"
    assert s2.sub_question == "What is the date of birth of Rune Vale?"


def test_without_evidences_an_unknown_type_is_rejected_with_its_name():
    raw = dict(BRIDGE_COMPARISON, evidences=None, type="riddle")
    _, ex, teacher = setup(raw)
    with pytest.raises(Reject, match="riddle"):
        teacher.decompose(ex)
