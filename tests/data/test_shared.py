"""The readers on the real dev/train samples in ../shared/data (skipped where that folder is absent)."""

import pytest

from efficientrag.config import load_config
from efficientrag.data import (
    DataConfig,
    DataFormatError,
    ReadResult,
    load_data,
    pool,
    read_2wiki,
    read_hotpotqa,
    read_musique,
)
from efficientrag.text.normalize import dedup_key

FILES = [
    ("hotpotqa", "hotpotqa/dev_ircot.350.jsonl", 350),
    ("hotpotqa", "hotpotqa/hotpot_dev_distractor_v1.first100.json", 100),
    ("hotpotqa", "hotpotqa/hotpot_train.100.json", 100),
    ("2wikimultihopqa", "2wikimultihopqa/dev.350.json", 350),
    ("musique", "musique/musique_ans_v1.0_dev.70.jsonl", 70),
    ("musique", "musique/musique_ans_v1.0_train.200.jsonl", 200),
]


@pytest.mark.parametrize(("dataset", "name", "count"), FILES, ids=[f[1] for f in FILES])
def test_every_shared_file_reads_strictly_and_pools(shared_data, dataset, name, count):
    pooled = load_data(DataConfig(dataset=dataset, path=str(shared_data / name), strict=True))
    assert len(pooled.examples) == count and not pooled.skipped
    assert len({e.id for e in pooled.examples}) == count
    for ex in pooled.examples:
        assert ex.dataset == dataset and ex.answers and ex.answers[0].strip()
        assert len(ex.gold_chunk_ids) >= 2, ex.id
        assert all(g in pooled.corpus for g in ex.gold_chunk_ids)
        assert set(ex.gold_chunk_ids) <= set(ex.context_ids)
    assert pooled.stats["chunks_after"] <= pooled.stats["chunks_before"]


def test_hop_order_and_types_match_the_sources(shared_data):
    musique = read_musique(shared_data / "musique/musique_ans_v1.0_dev.70.jsonl")
    for ex in musique.examples:
        support = [s["paragraph_support_idx"] for s in ex.raw["question_decomposition"]]
        assert ex.gold_chunk_ids == [f"{ex.id}-{i:02d}" for i in dict.fromkeys(support)]
        assert ex.type == ex.id.split("__")[0] and len(ex.gold_chunk_ids) == int(ex.type[0])
    wiki = read_2wiki(shared_data / "2wikimultihopqa/dev.350.json")
    types = {ex.type for ex in wiki.examples}
    assert types == {"compositional", "comparison", "bridge_comparison", "inference"}
    chunk = {c.id: c for c in wiki.chunks}
    for ex in wiki.examples:
        titles = list(dict.fromkeys(t for t, _ in ex.raw["supporting_facts"]))
        assert [chunk[g].title for g in ex.gold_chunk_ids] == titles
    ircot = read_hotpotqa(shared_data / "hotpotqa/dev_ircot.350.jsonl")
    assert all(ex.type == "" and len(ex.gold_chunk_ids) == 2 for ex in ircot.examples)


def test_distractor_100_pool_to_the_same_chunks_as_ircot_350(shared_data):
    ircot = read_hotpotqa(shared_data / "hotpotqa/dev_ircot.350.jsonl")
    distractor = read_hotpotqa(shared_data / "hotpotqa/hotpot_dev_distractor_v1.first100.json")
    ircot_pool = pool([ircot])
    # the distractor files' paragraphs add nothing to the IRCoT pool: same text, same ids
    paragraphs_only = ReadResult("hotpotqa", distractor.path, [], distractor.chunks)
    both = pool([ircot, paragraphs_only])
    assert both.corpus.ids == ircot_pool.corpus.ids
    ircot_examples = {e.id: e for e in ircot_pool.examples}
    distractor_pool = pool([distractor])
    for ex in distractor_pool.examples:
        twin = ircot_examples[ex.id]
        assert {both.id_map[g] for g in ex.gold_chunk_ids} == set(twin.gold_chunk_ids)
        keys = {dedup_key(distractor_pool.corpus.get(g).contents) for g in ex.gold_chunk_ids}
        assert keys == {dedup_key(ircot_pool.corpus.get(g).contents) for g in twin.gold_chunk_ids}
        assert ex.answers[0] in twin.answers
    with pytest.raises(DataFormatError, match="also appears in"):
        pool([ircot, distractor])  # same questions twice: refused, not silently doubled


def test_hotpot_train_with_its_corpus_file(shared_data):
    pooled = load_data(
        DataConfig(
            dataset="hotpotqa",
            path=str(shared_data / "hotpotqa/hotpot_train.100.json"),
            corpus_path=str(shared_data / "hotpotqa/hotpot_train.100.corpus.json"),
        )
    )
    # the corpus file is exactly the de-duplicated pool of the 100 questions' paragraphs
    assert len(pooled.corpus) == 994
    assert not any(cid.startswith("title:") for cid in pooled.corpus.ids)
    assert pooled.stats["per_dataset"]["hotpotqa"]["unique_chunks"] == 994


def test_combined_pool_of_all_files(shared_data):
    cfg = load_config(
        DataConfig,
        data={
            "dataset": "hotpotqa",
            "path": str(shared_data / "hotpotqa/dev_ircot.350.jsonl"),
            "extra": [
                {"dataset": "hotpotqa", "path": str(shared_data / "hotpotqa/hotpot_train.100.json")},
                {"dataset": "2wiki", "path": str(shared_data / "2wikimultihopqa/dev.350.json")},
                {"dataset": "musique", "path": str(shared_data / "musique/musique_ans_v1.0_dev.70.jsonl")},
                {"dataset": "musique", "path": str(shared_data / "musique/musique_ans_v1.0_train.200.jsonl")},
            ],
        },
    )
    pooled = load_data(cfg)
    per = pooled.stats["per_dataset"]
    assert len(pooled.examples) == 1070 and not pooled.skipped
    assert len(pooled.corpus) <= sum(d["unique_chunks"] for d in per.values())
    assert all(g in pooled.corpus for e in pooled.examples for g in e.gold_chunk_ids)
    assert {e.dataset for e in pooled.examples} == {"hotpotqa", "2wikimultihopqa", "musique"}
