"""The rerank benchmark's own reading of a run: question types joined in where the dev file lacks
them (HotpotQA's IRCoT file), and the loop variants it may choose on validation."""

import json

BENCHMARK = "retrieval_rerank"  # the conftest fixture `bench` imports it


def test_types_come_from_the_distractor_file_where_the_dev_file_has_none(bench, tmp_path):
    (tmp_path / "hotpotqa").mkdir()
    rows = [{"_id": "a", "type": "comparison"}, {"_id": "b", "type": "bridge"}]
    (tmp_path / "hotpotqa" / "hotpot_dev_distractor_v1.first100.json").write_text(json.dumps(rows))
    types = bench.known_types(str(tmp_path), "hotpotqa")
    assert types == {"a": "comparison", "b": "bridge"}
    # Datasets whose dev files name their types read nothing; a missing file is no types.
    assert bench.known_types(str(tmp_path), "2wikimultihopqa") == {}
    assert bench.known_types(str(tmp_path / "elsewhere"), "hotpotqa") == {}

    run = tmp_path / "run"
    run.mkdir()
    records = [
        {"id": "a", "type": "", "retrieval": {}, "counters": {}, "prediction": "dropped"},
        {"id": "c", "type": "", "retrieval": {}, "counters": {}},
        {"id": "b", "type": "comparison", "retrieval": {}, "counters": {}},
    ]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    got = bench._records(run, types)
    # The record's own type wins; an unknown id stays untyped; only the fields the tables read are kept.
    assert [(r["id"], r["type"]) for r in got] == [("a", "comparison"), ("c", ""), ("b", "comparison")]
    assert set(got[0]) == {"id", "type", "retrieval", "counters"}


def test_every_loop_variant_is_a_valid_loop_setting(bench):
    from efficientrag.pipeline.config import EfficientRAGConfig

    base = {"top_k": 6, "chunk_budget": 7, "budget_policy": "best", "floor_k": 3}
    for name, changes in {**bench.LOOP_VARIANTS, **bench.RERANKED_VARIANTS}.items():
        settings = dict(base)
        for change in changes:
            key, value = change.split("=")
            settings[key] = value == "true" if value in ("true", "false") else int(value)
        if name in bench.RERANKED_VARIANTS:
            settings["first_hop_reranker"] = "some/cross-encoder"
        EfficientRAGConfig(**settings)
