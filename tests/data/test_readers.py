import copy
import json

import pytest

from efficientrag.data import (
    DataFormatError,
    read_2wiki,
    read_dataset,
    read_hotpotqa,
    read_jsonl_dataset,
    read_musique,
    read_title_corpus,
)
from efficientrag.data.readers import canonical_dataset_name, read_corpus_file

# --- small inline records in each dataset's own format ------------------------------------------


def hotpot_record(qid="h1", **over):
    rec = {
        "_id": qid,
        "question": "Which city was the birthplace of the author of Moon Song?",
        "answer": "Lyra",
        "type": "bridge",
        "level": "hard",
        # listed hop-2 first: the gold order must follow supporting_facts, not the context
        "supporting_facts": [["Ann Vo", 0], ["Moon Song", 1], ["Ann Vo", 1]],
        "context": [
            ["Moon Song", ["Moon Song is a novel.", " It was written by Ann Vo."]],
            ["Sun Song", [" Sun Song is a film. ", "  "]],
            ["Ann Vo", ["Ann Vo is a writer.", " She was born in Lyra."]],
        ],
    }
    rec.update(over)
    return rec


def ircot_record(qid="i1", **over):
    rec = {
        "question_id": qid,
        "question_text": "Who founded the studio that made Red Door?",
        "answers_objects": [
            {"number": "", "date": {"day": "", "month": "", "year": ""}, "spans": ["Bo Lin", "B. Lin"]},
            {"number": "", "date": {"day": "", "month": "", "year": ""}, "spans": ["Bo Lin", "Lin"]},
        ],
        "contexts": [
            {
                "id": "0",
                "title": "Red Door",
                "paragraph_text": "Red Door was made by Kite.  It is red.",
                "is_supporting": True,
            },
            {
                "id": "1",
                "title": "Blue Door",
                "paragraph_text": "Blue Door is a film.",
                "is_supporting": False,
            },
            {
                "id": "2",
                "title": "Kite",
                "paragraph_text": "Kite was founded by Bo Lin.",
                "is_supporting": True,
            },
        ],
    }
    rec.update(over)
    return rec


def wiki_record(qid="w1", **over):
    rec = {
        "_id": qid,
        "type": "bridge_comparison",
        "question": "Which film has the director born earlier, Alpha or Beta?",
        "context": [
            ["Beta", ["Beta is a film directed by Dee."]],
            ["Cee", ["Cee was born in 1901."]],
            ["Alpha", ["Alpha is a film directed by Cee."]],
            ["Zed", ["Zed is a town."]],
            ["Dee", ["Dee was born in 1920."]],
            ["Zed", ["Zed is a town."]],
        ],
        "supporting_facts": [["Alpha", 0], ["Cee", 0], ["Beta", 0], ["Dee", 0], ["Alpha", 0]],
        "evidences": [["Alpha", "director", "Cee"], ["Cee", "date of birth", "1901"]],
        "answer": "Alpha",
        "entity_ids": "Q1_Q2",
    }
    rec.update(over)
    return rec


def musique_record(qid="2hop__1_2", **over):
    rec = {
        "id": qid,
        "paragraphs": [
            {"idx": 0, "title": "Lyra", "paragraph_text": "Lyra is a city in Norv.", "is_supporting": True},
            {
                "idx": 1,
                "title": "Moon Song",
                "paragraph_text": "Moon Song was written by Ann Vo.",
                "is_supporting": False,
            },
            {
                "idx": 5,
                "title": "Ann Vo",
                "paragraph_text": " Ann Vo was born in Lyra. ",
                "is_supporting": True,
            },
        ],
        "question": "In which country was Ann Vo born?",
        "question_decomposition": [
            {"id": 1, "question": "Where was Ann Vo born?", "answer": "Lyra", "paragraph_support_idx": 5},
            {"id": 2, "question": "Which country is #1 in?", "answer": "Norv", "paragraph_support_idx": 0},
        ],
        "answer": "Norv",
        "answer_aliases": ["Republic of Norv", "Norv"],
        "answerable": True,
    }
    rec.update(over)
    return rec


def write_json(path, obj):
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def write_lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- readers ------------------------------------------------------------------------------------


def test_hotpotqa_distractor_json(tmp_path):
    rec = hotpot_record()
    path = write_json(tmp_path / "dev.json", [rec, hotpot_record("h2", type="comparison")])
    result = read_hotpotqa(path)
    assert result.dataset == "hotpotqa" and result.path == str(path) and not result.skipped
    ex = result.examples[0]
    assert ex.id == "h1" and ex.answers == ["Lyra"] and ex.type == "bridge" and ex.dataset == "hotpotqa"
    assert ex.gold_chunk_ids == ["h1-02", "h1-00"]  # supporting_facts order, repeats dropped
    assert ex.context_ids == ["h1-00", "h1-01", "h1-02"]
    assert ex.raw == rec
    assert [(c.id, c.title, c.text) for c in result.chunks[:3]] == [
        ("h1-00", "Moon Song", "Moon Song is a novel. It was written by Ann Vo."),
        ("h1-01", "Sun Song", "Sun Song is a film."),
        ("h1-02", "Ann Vo", "Ann Vo is a writer. She was born in Lyra."),
    ]
    assert len(result.chunks) == 6 and result.examples[1].type == "comparison"


def test_hotpotqa_hugging_face_column_layout(tmp_path):
    rec = hotpot_record(
        supporting_facts={"title": ["Ann Vo", "Moon Song"], "sent_id": [1, 1]},
        context={
            "title": ["Moon Song", "Ann Vo"],
            "sentences": [["Moon Song is a novel."], ["Ann Vo was born in Lyra."]],
        },
    )
    ex = read_hotpotqa(write_json(tmp_path / "hf.json", [rec])).examples[0]
    assert ex.gold_chunk_ids == ["h1-01", "h1-00"]


def test_hotpotqa_ircot_jsonl(tmp_path):
    path = write_lines(tmp_path / "dev_ircot.jsonl", [ircot_record(), ircot_record("i2")])
    result = read_hotpotqa(path)
    ex = result.examples[0]
    assert ex.answers == ["Bo Lin", "B. Lin", "Lin"]
    assert ex.gold_chunk_ids == ["i1-00", "i1-02"] and ex.type == "" and ex.dataset == "hotpotqa"
    assert result.chunks[0].text == "Red Door was made by Kite.  It is red."
    assert len(result.examples) == 2


def test_hotpotqa_format_is_detected_by_content_not_extension(tmp_path):
    ircot_named_json = write_lines(tmp_path / "looks_like.json", [ircot_record()])
    distractor_named_jsonl = write_json(tmp_path / "looks_like.jsonl", [hotpot_record()])
    distractor_as_lines = write_lines(tmp_path / "lines.jsonl", [hotpot_record()])
    assert read_hotpotqa(ircot_named_json).examples[0].gold_chunk_ids == ["i1-00", "i1-02"]
    assert read_hotpotqa(distractor_named_jsonl).examples[0].gold_chunk_ids == ["h1-02", "h1-00"]
    assert read_hotpotqa(distractor_as_lines).examples[0].id == "h1"
    with pytest.raises(DataFormatError, match="field 'question_id'"):
        read_hotpotqa(distractor_named_jsonl, format="ircot")
    assert read_hotpotqa(ircot_named_json, format="ircot").examples[0].id == "i1"
    unknown = write_lines(tmp_path / "other.jsonl", [{"q": "x"}])
    with pytest.raises(DataFormatError, match="format='distractor' or 'ircot'"):
        read_hotpotqa(unknown)


def test_2wiki_gold_follows_the_evidence_chain(tmp_path):
    rec = wiki_record()
    result = read_2wiki(write_json(tmp_path / "dev.json", [rec]))
    ex = result.examples[0]
    assert ex.dataset == "2wikimultihopqa" and ex.type == "bridge_comparison" and ex.answers == ["Alpha"]
    # Alpha -> Cee, then Beta -> Dee: first appearance in supporting_facts
    assert ex.gold_chunk_ids == ["w1-02", "w1-01", "w1-00", "w1-04"]
    assert [c.id for c in result.chunks] == [f"w1-{i:02d}" for i in range(6)]
    assert ex.raw == rec


def test_2wiki_repeated_title_maps_to_first_copy(tmp_path):
    rec = wiki_record(supporting_facts=[["Zed", 0], ["Alpha", 0]])
    ex = read_2wiki(write_json(tmp_path / "dev.json", [rec])).examples[0]
    assert ex.gold_chunk_ids == ["w1-03", "w1-02"]


def test_musique_gold_in_decomposition_order_and_aliases(tmp_path):
    path = write_lines(
        tmp_path / "musique.jsonl",
        [musique_record(), musique_record("3hop1__7_8_9", type="compositional")],
    )
    result = read_musique(path)
    ex = result.examples[0]
    assert ex.gold_chunk_ids == ["2hop__1_2-05", "2hop__1_2-00"]  # not idx order
    assert ex.context_ids == ["2hop__1_2-00", "2hop__1_2-01", "2hop__1_2-05"]
    assert ex.answers == ["Norv", "Republic of Norv"]
    assert ex.type == "2hop" and result.examples[1].type == "compositional"
    assert result.chunks[2].text == "Ann Vo was born in Lyra."


def test_musique_unanswerable_records_are_skipped_with_a_reason(tmp_path):
    path = write_lines(
        tmp_path / "full.jsonl",
        [musique_record(), musique_record(answerable=False), musique_record("2hop__3_4")],
    )
    result = read_musique(path)  # strict: unanswerable is not an error
    assert [e.id for e in result.examples] == ["2hop__1_2", "2hop__3_4"]
    assert len(result.skipped) == 1
    skipped = result.skipped[0]
    assert skipped.line == 2 and skipped.record == "2hop__1_2" and "answerable: false" in skipped.error


def test_generic_jsonl_dataset_with_our_corpus_and_flashrag_corpus(tmp_path):
    questions = write_lines(
        tmp_path / "q.jsonl",
        [
            {
                "id": "q1",
                "question": "Who?",
                "answers": ["A", "A", "a"],
                "gold_ids": ["c2", "c1"],
                "type": "bridge",
            },
            {"id": 7, "question": "What?", "answer": "B", "gold_chunk_ids": []},
        ],
    )
    corpus = write_lines(
        tmp_path / "corpus.jsonl",
        [{"id": "c1", "title": "T1", "text": "one"}, {"id": "c2", "title": "T2", "text": "two"}],
    )
    result = read_jsonl_dataset(questions, corpus)
    assert result.dataset == "jsonl" and [c.id for c in result.chunks] == ["c1", "c2"]
    q1, q2 = result.examples
    assert q1.gold_chunk_ids == ["c2", "c1"] and q1.answers == ["A", "a"] and q1.context_ids == []
    assert q2.id == "7" and q2.answers == ["B"] and q2.gold_chunk_ids == []
    flash = write_lines(
        tmp_path / "flash.jsonl", [{"id": "c1", "contents": "T1\none"}, {"id": "c2", "contents": "two"}]
    )
    result = read_jsonl_dataset(questions, flash)
    assert [(c.title, c.text) for c in result.chunks] == [("T1", "one"), ("", "two")]


def test_title_corpus_ids_come_from_titles(tmp_path):
    path = write_json(
        tmp_path / "x.corpus.json", {"Ann Vo": ["Ann Vo is a writer.", " She lives."], "Lyra": "A city. "}
    )
    chunks = read_title_corpus(path)
    assert [(c.id, c.title, c.text) for c in chunks] == [
        ("title:Ann Vo", "Ann Vo", "Ann Vo is a writer. She lives."),
        ("title:Lyra", "Lyra", "A city."),
    ]
    assert read_corpus_file(path, dataset="hotpotqa").chunks == chunks
    with pytest.raises(DataFormatError, match=r"record Lyra, field 'Lyra': expected a string or a list"):
        read_title_corpus(write_json(tmp_path / "bad.json", {"Lyra": 3}))


def test_registry_names_and_aliases(tmp_path):
    path = write_json(tmp_path / "dev.json", [wiki_record()])
    for name in ("2wikimultihopqa", "2wiki", "2WikiMQA"):
        assert read_dataset(name, path).dataset == "2wikimultihopqa"
    assert canonical_dataset_name("HotpotQA") == "hotpotqa"
    with pytest.raises(ValueError, match="known names: .*musique"):
        read_dataset("natural_questions", path)
    with pytest.raises(ValueError, match="needs the path"):
        read_dataset("musique")


def test_limit_counts_examples(tmp_path):
    path = write_lines(tmp_path / "m.jsonl", [musique_record(f"2hop__{i}") for i in range(5)])
    result = read_musique(path, limit=2)
    assert [e.id for e in result.examples] == ["2hop__0", "2hop__1"]
    assert {c.id.rsplit("-", 1)[0] for c in result.chunks} == {"2hop__0", "2hop__1"}


# --- malformed input: each error names the file, the line or record, and the field --------------


def _without(rec, key):
    rec = copy.deepcopy(rec)
    del rec[key]
    return rec


MALFORMED = {
    "missing field": (
        read_hotpotqa,
        "json",
        _without(hotpot_record(), "answer"),
        "record h1",
        "field 'answer'",
        "missing field",
    ),
    "wrong type": (
        read_musique,
        "jsonl",
        musique_record(paragraphs=[{"idx": "0", "title": "Lyra", "paragraph_text": "x"}]),
        "line 2",
        "field 'paragraphs[0].idx'",
        "expected an integer, got a string",
    ),
    "empty question": (
        read_2wiki,
        "json",
        wiki_record(question="  "),
        "record w1",
        "field 'question'",
        "empty question",
    ),
    "zero-width question": (
        read_2wiki,
        "json",
        wiki_record(question="\u200b\ufeff"),
        "record w1",
        "field 'question'",
        "empty question",
    ),
    "lone surrogate": (
        read_musique,
        "jsonl",
        musique_record(question="Who is Lyra\ud800?"),
        "line 2",
        "field 'question'",
        "question: not valid Unicode text: a lone surrogate (U+D800) at character 11",
    ),
    "empty answer": (
        read_hotpotqa,
        "jsonl",
        ircot_record(answers_objects=[{"spans": [" "]}]),
        "line 2",
        "field 'answers_objects'",
        "empty answer",
    ),
    "hotpot gold absent": (
        read_hotpotqa,
        "json",
        hotpot_record(supporting_facts=[["Nobody", 0], ["Ann Vo", 0]]),
        "record h1",
        "field 'supporting_facts'",
        "gold paragraph absent: supporting fact title 'Nobody'",
    ),
    "2wiki gold absent": (
        read_2wiki,
        "json",
        wiki_record(supporting_facts=[["Alpha", 0], ["Gamma", 0]]),
        "record w1",
        "field 'supporting_facts'",
        "gold paragraph absent",
    ),
    "musique gold absent": (
        read_musique,
        "jsonl",
        musique_record(
            question_decomposition=[{"id": 1, "question": "q", "answer": "a", "paragraph_support_idx": 9}]
        ),
        "line 2",
        "field 'question_decomposition[0].paragraph_support_idx'",
        "gold paragraph absent: no paragraph has idx 9",
    ),
    "ircot no support": (
        read_hotpotqa,
        "jsonl",
        ircot_record(contexts=[{"id": "0", "title": "A", "paragraph_text": "a", "is_supporting": False}]),
        "line 2",
        "field 'contexts'",
        "gold paragraph absent",
    ),
    "wrong sentence list": (
        read_2wiki,
        "json",
        wiki_record(context=[["Alpha", "Alpha is a film."]]),
        "record w1",
        "field 'context[0][1]'",
        "expected a list, got a string",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_record_error_names_file_position_and_field(tmp_path, case):
    reader, container, bad, position, field, message = MALFORMED[case]
    good = {
        read_hotpotqa: hotpot_record("ok") if container == "json" else ircot_record("ok"),
        read_2wiki: wiki_record("ok"),
        read_musique: musique_record("ok"),
    }[reader]
    path = tmp_path / f"data.{container}"
    (write_json if container == "json" else write_lines)(path, [good, bad])
    with pytest.raises(DataFormatError) as err:
        reader(path)
    text = str(err.value)
    assert str(path) in text and position in text and field in text and message in text, text
    lenient = reader(path, strict=False)
    assert [e.id for e in lenient.examples] == ["ok"]
    assert [s.error for s in lenient.skipped] == [text]


def test_bad_json_line_names_file_and_line_and_lenient_read_skips_it(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        json.dumps(musique_record("a")) + "\n{not json\n" + json.dumps(musique_record("b")) + "\n"
    )
    with pytest.raises(DataFormatError) as err:
        read_musique(path)
    assert str(path) in str(err.value) and "line 2" in str(err.value) and "not valid JSON" in str(err.value)
    result = read_musique(path, strict=False)
    assert [e.id for e in result.examples] == ["a", "b"]
    assert result.skipped[0].line == 2 and str(path) in result.skipped[0].error


def test_broken_json_list_file_raises_even_when_lenient(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text('[\n{"_id": "a"},\n{"_id": \n')
    with pytest.raises(DataFormatError, match=r"dev.json, line \d+: not valid JSON"):
        read_2wiki(path, strict=False)
    write_json(path, {"data": []})  # not a list: read as one JSONL record, which lacks every field
    with pytest.raises(DataFormatError, match=r"dev.json, line 1, record 0, field '_id': missing field"):
        read_2wiki(path)


def test_duplicate_example_ids(tmp_path):
    path = write_lines(tmp_path / "m.jsonl", [musique_record("x"), musique_record("y"), musique_record("x")])
    with pytest.raises(DataFormatError) as err:
        read_musique(path)
    text = str(err.value)
    assert str(path) in text and "line 3" in text and "record x" in text and "field 'id'" in text
    assert "duplicate example id (first seen at line 1)" in text
    lenient = read_musique(path, strict=False)
    assert [e.id for e in lenient.examples] == ["x", "y"] and len(lenient.skipped) == 1
    assert {c.id for c in lenient.chunks} == {f"{q}-{i:02d}" for q in "xy" for i in (0, 1, 5)}


def test_jsonl_gold_id_missing_from_corpus(tmp_path):
    corpus = write_lines(tmp_path / "corpus.jsonl", [{"id": "c1", "title": "", "text": "one"}])
    questions = write_lines(
        tmp_path / "q.jsonl", [{"id": "q1", "question": "Who?", "answer": "A", "gold_ids": ["c1", "c9"]}]
    )
    with pytest.raises(DataFormatError) as err:
        read_jsonl_dataset(questions, corpus)
    text = str(err.value)
    assert (
        str(questions) in text and "line 1" in text and "record q1" in text and "field 'gold_ids[1]'" in text
    )
    assert "'c9' is not in the corpus" in text and str(corpus) in text
    no_answer = write_lines(tmp_path / "q2.jsonl", [{"id": "q1", "question": "Who?", "gold_ids": []}])
    with pytest.raises(DataFormatError, match="field 'answers': missing field"):
        read_jsonl_dataset(no_answer, corpus)


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(DataFormatError, match="file not found"):
        read_musique(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(DataFormatError, match="empty.jsonl: file is empty"):
        read_musique(tmp_path / "empty.jsonl")
