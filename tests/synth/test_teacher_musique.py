import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk, Example
from efficientrag.synth.records import Reject, validate_decomposition
from efficientrag.synth.teacher.annotations import AnnotationTeacher

PARAGRAPHS = [
    {
        "idx": 0,
        "title": "Keala Settle",
        "paragraph_text": "Keala Settle is an American actress.",
        "is_supporting": False,
    },
    {
        "idx": 1,
        "title": "My Fair Lady (film)",
        "paragraph_text": "The film stars Audrey Hepburn as Eliza Doolittle and Rex Harrison as Henry Higgins.",
        "is_supporting": True,
    },
    {
        "idx": 7,
        "title": "Audrey Hepburn",
        "paragraph_text": "Audrey Hepburn was a British actress. She won a Tony Award for Best Actress in a Play for "
        "Ondine in 1954. She died in 1993.",
        "is_supporting": True,
    },
]


def musique_record(decomposition, paragraphs=PARAGRAPHS):
    return {
        "id": "2hop__1_2",
        "question": "What did the actress in My Fair Lady win a Tony for?",
        "answer": "Best Actress in a Play",
        "paragraphs": paragraphs,
        "question_decomposition": decomposition,
        "answerable": True,
    }


TWO_HOP = [
    {
        "id": 11,
        "question": "who was the actress in my fair lady",
        "answer": "Audrey Hepburn",
        "paragraph_support_idx": 1,
    },
    {
        "id": 12,
        "question": "what did #1 win a tony for",
        "answer": "Best Actress in a Play",
        "paragraph_support_idx": 7,
    },
]


def corpus_and_example(raw, gold_titles=("My Fair Lady (film)", "Audrey Hepburn")):
    # Pooled ids on purpose unlike the raw positions: the teacher must map by content.
    chunks = [
        Chunk(f"pool-{n}", p["title"], p["paragraph_text"]) for n, p in enumerate(reversed(raw["paragraphs"]))
    ]
    corpus = Corpus(chunks)
    gold = [c.id for t in gold_titles for c in chunks if c.title == t]
    ex = Example(
        raw["id"], raw["question"], [raw["answer"]], gold, "2hop", "musique", [c.id for c in chunks], raw
    )
    return corpus, ex


def test_decomposition_from_annotations_with_references_resolved():
    corpus, ex = corpus_and_example(musique_record(TWO_HOP))
    teacher = AnnotationTeacher(corpus)
    d = teacher.decompose(ex)
    validate_decomposition(d.sub_questions, ex.gold_chunk_ids)
    s1, s2 = d.sub_questions
    assert (s1.idx, s1.dependency, s1.answer) == (1, [], "Audrey Hepburn")
    assert corpus.get(s1.chunk_id).title == "My Fair Lady (film)"
    assert s2.sub_question == "what did Audrey Hepburn win a tony for"
    assert s2.dependency == [1]
    assert corpus.get(s2.chunk_id).title == "Audrey Hepburn"
    assert d.type == "2hop"


def test_knowledge_base_form_becomes_a_question():
    steps = [
        {
            "id": 1,
            "question": "My Fair Lady >> cast member",
            "answer": "Audrey Hepburn",
            "paragraph_support_idx": 1,
        },
        {"id": 2, "question": "#1 >> place of death", "answer": "Tolochenaz", "paragraph_support_idx": 7},
    ]
    corpus, ex = corpus_and_example(musique_record(steps))
    d = AnnotationTeacher(corpus).decompose(ex)
    assert d.sub_questions[0].sub_question == "What is the cast member of My Fair Lady?"
    assert d.sub_questions[1].sub_question == "Where did Audrey Hepburn die?"
    assert d.sub_questions[1].dependency == [1]


def test_multiple_references_make_multiple_dependencies():
    steps = [
        {
            "id": 1,
            "question": "Who starred in My Fair Lady?",
            "answer": "Audrey Hepburn",
            "paragraph_support_idx": 1,
        },
        {
            "id": 2,
            "question": "Who was the actress Keala Settle?",
            "answer": "actress",
            "paragraph_support_idx": 0,
        },
        {
            "id": 3,
            "question": "What did #1 and #2 win?",
            "answer": "a Tony Award",
            "paragraph_support_idx": 7,
        },
    ]
    paragraphs = [dict(p, is_supporting=True) for p in PARAGRAPHS]
    corpus, ex = corpus_and_example(
        musique_record(steps, paragraphs), gold_titles=[p["title"] for p in PARAGRAPHS]
    )
    d = AnnotationTeacher(corpus).decompose(ex)
    assert d.sub_questions[2].dependency == [1, 2]
    validate_decomposition(d.sub_questions, ex.gold_chunk_ids)


def test_missing_paragraph_support_is_rejected_with_reason():
    steps = [dict(TWO_HOP[0]), dict(TWO_HOP[1], paragraph_support_idx=None)]
    corpus, ex = corpus_and_example(musique_record(steps))
    with pytest.raises(Reject) as err:
        AnnotationTeacher(corpus).decompose(ex)
    assert err.value.reason == "sub-question without gold paragraph"


def test_paragraph_missing_from_corpus_is_rejected():
    corpus, ex = corpus_and_example(musique_record(TWO_HOP))
    smaller = Corpus([c for c in corpus if c.title != "Audrey Hepburn"])
    with pytest.raises(Reject) as err:
        AnnotationTeacher(smaller).decompose(ex)
    assert err.value.reason == "gold paragraph not in corpus"


def test_gold_chunks_not_covered_by_the_decomposition_fail_validation():
    corpus, ex = corpus_and_example(
        musique_record(TWO_HOP), gold_titles=["My Fair Lady (film)", "Audrey Hepburn", "Keala Settle"]
    )
    d = AnnotationTeacher(corpus).decompose(ex)
    with pytest.raises(Reject) as err:
        validate_decomposition(d.sub_questions, ex.gold_chunk_ids)
    assert err.value.reason == "sub-questions do not match gold chunks"


def test_extracted_words_are_the_answer_and_sentence_overlap():
    corpus, ex = corpus_and_example(musique_record(TWO_HOP))
    teacher = AnnotationTeacher(corpus)
    s1, s2 = teacher.decompose(ex).sub_questions
    e1 = teacher.extract_words(ex, s1, corpus.get(s1.chunk_id))
    # Answer plus the sub-question's content words found in the answer's sentence ("film" is in
    # the sentence but not in the sub-question; "lady" is only in the title).
    assert e1.words == ["Audrey", "Hepburn"]
    e2 = teacher.extract_words(ex, s2, corpus.get(s2.chunk_id))
    # "won" is not "win" (no lemmas in the teacher's overlap), "Tony" is shared.
    assert e2.words == ["Tony", "Best", "Actress", "in", "a", "Play"]
    words = corpus.get(s2.chunk_id).contents
    assert e2.method == "answer"
    # The indices point at these words in the chunk (the align stage relies on it).
    from efficientrag.text.words import split_words

    assert [split_words(words)[i] for i in e2.chunk_word_indices] == e2.words


def test_answer_absent_falls_back_to_overlap_or_rejects():
    corpus, ex = corpus_and_example(musique_record(TWO_HOP))
    teacher = AnnotationTeacher(corpus)
    s1, s2 = teacher.decompose(ex).sub_questions
    s2.answer = "the Academy Award"
    e = teacher.extract_words(ex, s2, corpus.get(s2.chunk_id))
    # The one sentence sharing most content words with the sub-question.
    assert e.method == "overlap" and e.words == ["Audrey", "Hepburn"]
    s2.sub_question = "what is unrelated here"
    with pytest.raises(Reject) as err:
        teacher.extract_words(ex, s2, corpus.get(s2.chunk_id))
    assert err.value.reason == "answer not in chunk"
