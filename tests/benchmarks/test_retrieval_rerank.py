"""The rerank benchmark's own reading of a run: question types joined in where the dev file lacks
them (HotpotQA's IRCoT file), and the loop variants it may choose on validation."""

import json

BENCHMARK = "retrieval_rerank"  # the conftest fixture `bench` imports it


def test_types_come_from_the_distractor_file_where_the_dev_file_has_none(bench, tmp_path):
    from rerank_tables import known_types  # benchmarks/ is on the path while `bench` is in use

    (tmp_path / "hotpotqa").mkdir()
    rows = [{"_id": "a", "type": "comparison"}, {"_id": "b", "type": "bridge"}]
    (tmp_path / "hotpotqa" / "hotpot_dev_distractor_v1.first100.json").write_text(json.dumps(rows))
    types = known_types(str(tmp_path), "hotpotqa")
    assert types == {"a": "comparison", "b": "bridge"}
    # Datasets whose dev files name their types read nothing; a missing file is no types.
    assert known_types(str(tmp_path), "2wikimultihopqa") == {}
    assert known_types(str(tmp_path / "elsewhere"), "hotpotqa") == {}

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
    from efficientrag.config import load_config
    from efficientrag.pipeline.config import EfficientRAGConfig

    base = ["top_k=6", "chunk_budget=7", "budget_policy=best", "floor_k=3"]
    for name, changes in {**bench.LOOP_VARIANTS, **bench.RERANKED_VARIANTS}.items():
        reranker = ["first_hop_reranker=some/cross-encoder"] if name in bench.RERANKED_VARIANTS else []
        cfg = load_config(EfficientRAGConfig, None, [*base, *changes, *reranker])
        assert all(str(getattr(cfg, c.split("=")[0])).lower() == c.split("=")[1] for c in changes), name


def test_a_variants_keys_replace_the_settings_and_a_reranked_one_names_the_reranker(bench, tmp_path):
    setting = ("k6", ["top_k=6", "floor_k=3", "chunk_budget=7"])
    got = bench.loop_candidates(setting, ["fill"], ["ce20-f5"], tmp_path / "ce")
    assert got["k6"] == setting[1]
    assert got["k6+fill"] == ["top_k=6", "floor_k=3", "chunk_budget=7", "fill_budget=true"]
    # floor_k=5 replaces the setting's floor_k=3 instead of sitting beside it.
    assert got["k6+ce20-f5"] == [
        "top_k=6",
        "chunk_budget=7",
        "first_top_k=20",
        "floor_k=5",
        f"first_hop_reranker={tmp_path / 'ce'}",
    ]
    assert list(bench.loop_candidates(setting, [], [], tmp_path)) == ["k6"]


def test_after_adaptation_only_the_rows_without_labeler_or_filter_are_reused(bench):
    runs = {
        "Direct-R": 1,
        "EfficientRAG": 2,
        "EfficientRAG, protocol setting (not chosen)": 3,
        "rerank N=20": 4,
        "rerank N=50": 5,
        "Labeler rerank N=20": 6,
    }
    assert bench.shared_rows(runs) == {"Direct-R": 1, "rerank N=20": 4, "rerank N=50": 5}


def test_every_cross_encoder_recipe_is_a_valid_training_config(bench):
    from rerank_cross_encoder import PRESET, RECIPES  # benchmarks/ is on the path while `bench` is in use

    from efficientrag.config import load_config
    from efficientrag.training.reranker_config import RerankerTrainConfig

    for name, changes in RECIPES.items():
        cfg = load_config(RerankerTrainConfig, PRESET, changes)
        assert cfg.epochs == 4 and cfg.top_negatives <= cfg.negatives, name
    assert load_config(RerankerTrainConfig, PRESET, RECIPES["neg4-top1-ep4"]).top_negatives == 1


def test_a_fused_reranker_row_is_built_fused_in_its_own_folder(bench, monkeypatch, tmp_path):
    from rerank_methods import rerankers

    from efficientrag.baselines.labeler_rerank import LabelerRerank
    from efficientrag.baselines.rerank import Rerank

    monkeypatch.setattr(Rerank, "load_scorer", lambda self: None)
    monkeypatch.setattr(LabelerRerank, "load_scorer", lambda self: None)
    pool = type("Pool", (), {"retriever": object()})()
    rows = rerankers(pool, tmp_path, tmp_path / "ce", {"rerank N=20": "rrf", "Labeler rerank N=50": "rrf"})
    assert {name: (m.cfg.fusion, folder) for name, (m, folder) in rows.items()} == {
        "rerank N=20": ("rrf", "rerank-n20-rrf"),
        "Labeler rerank N=20": ("none", "labeler-rerank-n20"),
        "rerank N=50": ("none", "rerank-n50"),
        "Labeler rerank N=50": ("rrf", "labeler-rerank-n50-rrf"),
    }
    assert all(m.cfg.top_n == int(name.split("=")[1]) for name, (m, _) in rows.items())


def test_a_direction_without_the_open_domain_set_writes_its_report(bench, monkeypatch, tmp_path):
    """The dev path of ``run_direction`` end to end, each heavy step replaced: the report and its
    JSON are written whether or not ``--open-domain`` adds a set."""
    evaluated = []
    monkeypatch.setattr(
        bench, "train", lambda args, work, train_on: (tmp_path / "models", {}, {"musique": None})
    )
    monkeypatch.setattr(bench, "choose", lambda *a: ("k6", ["top_k=6"], {"n": 49}))
    monkeypatch.setattr(bench, "train_cross_encoder", lambda *a: (tmp_path / "ce", {"recipe": "neg4-ep4"}))
    monkeypatch.setattr(bench, "choose_loop", lambda *a: (("k6", ["top_k=6"]), {"k6": 50.0}))
    monkeypatch.setattr(bench, "deployed_rerankers", lambda *a: ({"rerank N=20": "rrf"}, {"fusion": {}}))
    monkeypatch.setattr(bench, "open_pool", lambda name, *a: name)

    def evaluate_dev(args, pool, name, *a, **kw):
        evaluated.append((pool, name, kw["fusion"]))
        return {"Direct-R": {"summary": {"n": 70}}}

    monkeypatch.setattr(bench, "evaluate_dev", evaluate_dev)
    monkeypatch.setattr(bench, "render", lambda **kw: f"report of {kw['train_on']} in {kw['retriever']}\n")
    monkeypatch.setattr(bench, "plot_dataset", lambda dataset, where, runs, path: path)
    args = type(
        "Args",
        (),
        {
            "validation_only": False,
            "deployed_only": False,
            "retriever": "bm25",
            "adapt": False,
            "open_domain": 0,
            "time_sample": 50,
        },
    )()
    report = bench.run_direction(args, tmp_path, ["musique"], ["musique"])
    assert evaluated == [("dev-musique", "musique", {"rerank N=20": "rrf"})]
    assert report.startswith("report of ['musique'] in bm25\n")
    assert (tmp_path / "rerank-musique_to_musique.md").read_text() == report
    saved = json.loads((tmp_path / "rerank-musique_to_musique.json").read_text())
    assert saved["setting"] == ["k6", ["top_k=6"]] and saved["results"] == {
        "musique": {"Direct-R": {"n": 70}}
    }


def test_only_the_rows_asked_for_are_built(bench, monkeypatch, tmp_path):
    from rerank_methods import rerankers

    from efficientrag.baselines.labeler_rerank import LabelerRerank
    from efficientrag.baselines.rerank import Rerank

    loaded = []
    monkeypatch.setattr(Rerank, "load_scorer", lambda self: loaded.append(self.cfg.top_n))
    monkeypatch.setattr(LabelerRerank, "load_scorer", lambda self: loaded.append(-self.cfg.top_n))
    pool = type("Pool", (), {"retriever": object()})()
    rows = rerankers(pool, tmp_path, tmp_path / "ce", {"rerank N=50": "rrf"}, only=["rerank N=50"])
    assert list(rows) == ["rerank N=50"] and rows["rerank N=50"][1] == "rerank-n50-rrf"
    assert loaded == [50]


def test_the_open_domain_set_makes_2wiki_a_left_out_set_when_it_is_not_trained_on(bench):
    args = type("Args", (), {"open_domain": 100})()
    assert bench.left_out_sets(args, ["hotpotqa", "musique"], ["hotpotqa"]) == ["2wikimultihopqa"]
    assert bench.left_out_sets(args, ["hotpotqa"], ["musique", "2wikimultihopqa"]) == [
        "musique",
        "2wikimultihopqa",
    ]
    assert bench.left_out_sets(args, ["2wikimultihopqa"], ["hotpotqa"]) == ["hotpotqa"]
    args.open_domain = 0
    assert bench.left_out_sets(args, ["hotpotqa", "musique"], ["hotpotqa"]) == []
