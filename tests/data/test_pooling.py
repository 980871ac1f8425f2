import json

import pytest

from efficientrag.config import load_config
from efficientrag.data import (
    Chunk,
    DataConfig,
    DataFormatError,
    Example,
    ReadResult,
    SkippedRecord,
    load_data,
    load_prepared,
    pool,
    save_prepared,
)
from efficientrag.errors import ConfigError


def ex(qid, gold, context, dataset="d1"):
    return Example(
        qid, f"question {qid}?", ["ans"], gold, type="bridge", dataset=dataset, context_ids=context
    )


@pytest.fixture
def three_examples():
    """A, B, C: B shares a paragraph with A (different spacing and case), C's two gold paragraphs
    are the same text as each other and as A's first one."""
    chunks = [
        Chunk("A-00", "X", "alpha one"),
        Chunk("A-01", "Y", "beta two"),
        Chunk("B-00", "Y", "Beta  two!"),
        Chunk("B-01", "Z", "gamma"),
        Chunk("C-00", "X", "alpha one"),
        Chunk("C-01", "x", "Alpha, one."),
        Chunk("C-02", "W", "delta"),
    ]
    examples = [
        ex("A", ["A-01", "A-00"], ["A-00", "A-01"]),
        ex("B", ["B-00", "B-01"], ["B-00", "B-01"]),
        ex("C", ["C-01", "C-00"], ["C-00", "C-01", "C-02"]),
    ]
    skipped = [SkippedRecord("bad record", line=4, record="D")]
    return ReadResult("d1", "d1.jsonl", examples, chunks, skipped)


def test_pool_dedups_and_remaps_by_hand(three_examples):
    pooled = pool([three_examples])
    assert pooled.corpus.ids == ["A-00", "A-01", "B-01", "C-02"]
    assert pooled.corpus.get("A-01").text == "beta two"  # the first one seen keeps id and text
    assert pooled.id_map == {
        "A-00": "A-00",
        "A-01": "A-01",
        "B-00": "A-01",
        "B-01": "B-01",
        "C-00": "A-00",
        "C-01": "A-00",
        "C-02": "C-02",
    }
    a, b, c = pooled.examples
    assert a.gold_chunk_ids == ["A-01", "A-00"]
    assert b.gold_chunk_ids == ["A-01", "B-01"] and b.context_ids == ["A-01", "B-01"]
    assert c.gold_chunk_ids == ["A-00"]  # two gold paragraphs collapsed into one
    assert c.context_ids == ["A-00", "C-02"]
    assert three_examples.examples[2].gold_chunk_ids == ["C-01", "C-00"]  # inputs untouched
    assert pooled.skipped == three_examples.skipped
    s = pooled.stats
    assert (s["chunks_before"], s["chunks_after"], s["duplicates_merged"]) == (7, 4, 3)
    assert (s["examples"], s["skipped"]) == (3, 1)
    assert s["per_dataset"] == {"d1": {"examples": 3, "skipped": 1, "chunks": 7, "unique_chunks": 4}}


def test_cross_dataset_pool(three_examples):
    other = ReadResult(
        "d2",
        "d2.json",
        [ex("E", ["E-00", "E-01"], ["E-00", "E-01"], dataset="d2")],
        [Chunk("E-00", "Z", "GAMMA"), Chunk("E-01", "V", "epsilon")],
    )
    pooled = pool([three_examples, other])
    assert pooled.corpus.ids == ["A-00", "A-01", "B-01", "C-02", "E-01"]
    assert pooled.examples[-1].gold_chunk_ids == ["B-01", "E-01"] and pooled.examples[-1].dataset == "d2"
    per = pooled.stats["per_dataset"]
    assert per["d2"] == {"examples": 1, "skipped": 0, "chunks": 2, "unique_chunks": 2}
    assert pooled.stats["chunks_after"] == 5 and pooled.stats["duplicates_merged"] == 4
    assert [src["path"] for src in pooled.stats["sources"]] == ["d1.jsonl", "d2.json"]


def test_same_id_same_text_merges_but_different_text_is_an_error(three_examples):
    again = ReadResult("d2", "d2.json", [], [Chunk("A-00", "X", "Alpha one")])
    assert pool([three_examples, again]).corpus.ids == ["A-00", "A-01", "B-01", "C-02"]
    clash = ReadResult("d2", "d2.json", [], [Chunk("A-00", "X", "something else")])
    with pytest.raises(DataFormatError) as err:
        pool([three_examples, clash])
    text = str(err.value)
    assert "d2.json" in text and "record A-00" in text and "field 'id'" in text and "d1.jsonl" in text


def test_two_examples_with_one_id_is_an_error(three_examples):
    dup = ReadResult("d2", "d2.json", [ex("B", ["E-00"], ["E-00"])], [Chunk("E-00", "Z", "gamma")])
    with pytest.raises(
        DataFormatError, match=r"d2.json, record B, field 'id': example id 'B' also appears in d1.jsonl"
    ):
        pool([three_examples, dup])


def test_gold_id_without_a_chunk_is_an_error():
    res = ReadResult("d1", "d1.jsonl", [ex("A", ["A-09"], [])], [Chunk("A-00", "X", "alpha")])
    with pytest.raises(DataFormatError, match="record A, field 'gold_chunk_ids'"):
        pool([res])


# --- config and loader --------------------------------------------------------------------------


def _musique_lines(path, ids, shared_text="Lyra is a city in Norv."):
    records = []
    for qid in ids:
        records.append(
            {
                "id": qid,
                "paragraphs": [
                    {"idx": 0, "title": "Lyra", "paragraph_text": shared_text, "is_supporting": True},
                    {
                        "idx": 1,
                        "title": f"P {qid}",
                        "paragraph_text": f"{qid} was born in Lyra.",
                        "is_supporting": True,
                    },
                ],
                "question": f"In which country was {qid} born?",
                "question_decomposition": [
                    {
                        "id": 1,
                        "question": f"Where was {qid} born?",
                        "answer": "Lyra",
                        "paragraph_support_idx": 1,
                    },
                    {
                        "id": 2,
                        "question": "Which country is #1 in?",
                        "answer": "Norv",
                        "paragraph_support_idx": 0,
                    },
                ],
                "answer": "Norv",
                "answer_aliases": [],
                "answerable": True,
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_load_data_toy_default_is_deterministic():
    cfg = load_config(DataConfig, overrides=["toy.seed=2", "toy.num_questions=30"])
    a, b = load_data(cfg), load_data(cfg)
    assert len(a.examples) == 30 and a.examples[0].dataset == "toy"
    assert a.corpus.fingerprint() == b.corpus.fingerprint()
    assert a.stats["chunks_after"] < a.stats["chunks_before"] == 300  # shared entity paragraphs merge
    assert all(g in a.corpus for e in a.examples for g in e.gold_chunk_ids)


def test_load_data_combined_pool_from_config(tmp_path):
    first = _musique_lines(tmp_path / "a.jsonl", ["a1", "a2"])
    second = _musique_lines(tmp_path / "b.jsonl", ["b1"])
    corpus = tmp_path / "extra.corpus.json"
    corpus.write_text(json.dumps({"Lyra": ["Lyra is a city", "in Norv."], "Mora": "Mora is a river."}))
    cfg = load_config(
        DataConfig,
        data={
            "dataset": "musique",
            "path": str(first),
            "corpus_path": str(corpus),
            "extra": [{"dataset": "musique", "path": str(second)}, {"dataset": "toy"}],
            "toy": {"num_questions": 5},
        },
    )
    pooled = load_data(cfg)
    assert [e.id for e in pooled.examples][:3] == ["a1", "a2", "b1"] and len(pooled.examples) == 8
    assert pooled.id_map["a2-00"] == pooled.id_map["b1-00"] == pooled.id_map["title:Lyra"] == "a1-00"
    assert "title:Mora" in pooled.corpus
    assert pooled.examples[2].gold_chunk_ids == ["b1-01", "a1-00"]
    assert set(pooled.stats["per_dataset"]) == {"musique", "toy"}


def test_loader_config_errors_say_what_to_pass(tmp_path):
    with pytest.raises(ConfigError, match=r"dataset 'hotpotqa' needs its data file: set 'path'"):
        load_data(DataConfig(dataset="hotpotqa"))
    with pytest.raises(ConfigError, match=r"'extra\[0\].path'"):
        load_data(
            load_config(DataConfig, data={"toy": {"num_questions": 5}, "extra": [{"dataset": "2wiki"}]})
        )
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "q", "question": "?", "answer": "a", "gold_ids": []}\n')
    with pytest.raises(ConfigError, match="'corpus_path'"):
        load_data(DataConfig(dataset="jsonl", path=str(q)))
    with pytest.raises(ConfigError, match="only for hotpotqa"):
        load_data(DataConfig(dataset="musique", path=str(q), format="ircot"))
    with pytest.raises(ConfigError, match="unknown dataset 'squad'"):
        load_data(DataConfig(dataset="squad", path=str(q)))


def test_lenient_loading_keeps_the_skipped_records(tmp_path):
    path = _musique_lines(tmp_path / "a.jsonl", ["a1", "a2"])
    path.write_text(path.read_text() + "{oops\n")
    with pytest.raises(DataFormatError, match="line 3"):
        load_data(DataConfig(dataset="musique", path=str(path)))
    pooled = load_data(DataConfig(dataset="musique", path=str(path), strict=False))
    assert len(pooled.examples) == 2 and pooled.skipped[0].line == 3 and pooled.stats["skipped"] == 1


def test_save_and_load_prepared_round_trip(tmp_path):
    path = _musique_lines(tmp_path / "a.jsonl", ["a1", "a2"])
    path.write_text(path.read_text() + "{oops\n")
    pooled = load_data(DataConfig(dataset="musique", path=str(path), strict=False))
    out = save_prepared(pooled, tmp_path / "prepared")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["corpus.jsonl", "examples.jsonl", "skipped.jsonl", "id_map.json", "stats.json"]
    )
    back = load_prepared(out)
    assert back.corpus.fingerprint() == pooled.corpus.fingerprint()
    assert [e.to_dict() for e in back.examples] == [e.to_dict() for e in pooled.examples]
    assert back.id_map == pooled.id_map and back.stats == pooled.stats
    assert [s.to_dict() for s in back.skipped] == [s.to_dict() for s in pooled.skipped]


def test_load_prepared_names_missing_files_and_broken_references(tmp_path):
    with pytest.raises(DataFormatError, match="missing corpus.jsonl, examples.jsonl"):
        load_prepared(tmp_path)
    pooled = load_data(load_config(DataConfig, overrides=["toy.num_questions=5"]))
    out = save_prepared(pooled, tmp_path / "p")
    (out / "id_map.json").unlink()
    with pytest.raises(DataFormatError, match="missing id_map.json"):
        load_prepared(out)
    out = save_prepared(pooled, tmp_path / "q")
    lines = (out / "corpus.jsonl").read_text().splitlines()
    gold = pooled.examples[0].gold_chunk_ids[0]
    (out / "corpus.jsonl").write_text("\n".join(ln for ln in lines if json.loads(ln)["id"] != gold) + "\n")
    with pytest.raises(
        DataFormatError, match=r"examples.jsonl, line 1, .*gold chunk id .* is not in corpus.jsonl"
    ):
        load_prepared(out)
