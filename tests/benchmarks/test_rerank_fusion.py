"""Rerankers as deployed: each alone or fused with the search's order, the choice made on the
training files' validation questions, the search's own order scored beside them, and the chosen
rows checked on a left-out set's validation questions."""

import json
from dataclasses import dataclass, field

import pytest

BENCHMARK = "rerank_fusion"  # the conftest fixture `bench` imports it

# Per (row, fusion), the validation score on each file: the cross-encoder gains from fusion, the
# Labeler loses, and an equal score keeps the reranker alone. "hotpotqa" is a left-out set.
SCORES = {
    ("rerank N=20", "none"): (0.4, 0.6, 0.3), ("rerank N=20", "rrf"): (0.6, 0.6, 0.5),
    ("Labeler rerank N=20", "none"): (0.8, 0.8, 0.2), ("Labeler rerank N=20", "rrf"): (0.7, 0.6, 0.9),
    ("rerank N=50", "none"): (0.5, 0.5, 0.1), ("rerank N=50", "rrf"): (0.5, 0.5, 0.1),
}  # fmt: skip
SEARCH = (0.55, 0.65, 0.6)  # the search's own order on the same files
FILES = ["2wikimultihopqa", "musique", "hotpotqa"]


@dataclass
class Settings:
    fusion: str = "none"


@dataclass
class Method:
    row: str
    pool: str
    cfg: Settings = field(default_factory=Settings)


@pytest.fixture
def scored(bench, monkeypatch):
    """The module with every run replaced by SCORES / SEARCH; returns the pools whose rerankers
    were built."""
    import retrieval_efficientrag  # benchmarks/ is on the path while `bench` is in use

    import efficientrag.eval.job_runs as job_runs
    from efficientrag.baselines.direct_r import DirectRetrieval

    loaded = []

    def rerankers(pool, models, reranker):
        loaded.append(pool.retriever)
        return {row: (Method(row, pool.retriever), row) for row, f in SCORES if f == "none"}

    def evaluate_ranked_run(method, examples, out, *, ks, progress):
        assert ks == [bench.FUSION_K]
        if isinstance(method, tuple):  # the search's own order
            assert examples == [method[1]] and out.name == f"direct_r_k{bench.FUSION_K}"
            value = SEARCH[FILES.index(method[1])]
        else:
            value = SCORES[(method.row, method.cfg.fusion)][FILES.index(method.pool)]
            assert examples == [method.pool]
            assert out.name == (
                method.row if method.cfg.fusion == "none" else f"{method.row}-{method.cfg.fusion}"
            )
        return {"retrieval": {str(bench.FUSION_K): {"recall": value, "all_gold": value}}}

    def open_pool(name, paths, root, args):
        assert name == f"train-{paths[0][0]}"
        return pool(paths[0][0])

    monkeypatch.setattr(bench, "rerankers", rerankers)
    monkeypatch.setattr(bench, "quick_config", lambda *a: None)
    monkeypatch.setattr(bench, "open_pool", open_pool)
    monkeypatch.setattr(retrieval_efficientrag, "validation_examples", lambda pool, cfg: [pool.retriever])
    monkeypatch.setattr(job_runs, "evaluate_ranked_run", evaluate_ranked_run)
    monkeypatch.setattr(
        DirectRetrieval, "ranking", classmethod(lambda cls, retriever, ks: ("search", retriever))
    )
    return loaded


def pool(name):
    return type("Pool", (), {"retriever": name})()


ARGS = type("Args", (), {"quiet": True})()


def test_each_reranker_gets_the_fusion_its_validation_mean_prefers(bench, scored, tmp_path):
    by_file = bench.validation_scores(ARGS, tmp_path, {f: pool(f) for f in FILES[:2]}, tmp_path / "ce")
    assert bench.choose_fusion(by_file) == {
        "rerank N=20": "rrf",
        "Labeler rerank N=20": "none",
        "rerank N=50": "none",
    }
    assert by_file["musique"]["Labeler rerank N=20"] == pytest.approx({"none": 0.8, "rrf": 0.6})
    assert {f: by[bench.SEARCH_ROW]["none"] for f, by in by_file.items()} == pytest.approx(
        {"2wikimultihopqa": 0.55, "musique": 0.65}
    )
    assert scored == FILES[:2]  # each pool's rerankers built (their models loaded) once


def test_a_left_out_set_is_checked_with_the_training_files_choice_not_its_own(bench, scored, tmp_path):
    pools = {f: pool(f) for f in FILES[:2]}
    chosen, info = bench.deployed_rerankers(ARGS, tmp_path, tmp_path, pools, tmp_path / "ce", ["hotpotqa"])
    # HotpotQA's questions favour the fused Labeler (0.9 against 0.2), but the choice stays the
    # training files' own.
    assert chosen["Labeler rerank N=20"] == "none" and info["fusion"] == chosen
    assert list(info["fusion_validation"]) == FILES[:2] and list(info["fusion_left_out"]) == ["hotpotqa"]
    lines = bench.fusion_table(chosen, info["fusion_validation"], info["fusion_left_out"])
    text = "\n".join(lines)
    assert (
        "| reranker | chosen | 2wikimultihopqa | musique | hotpotqa (left out) | mean of the training files |"
        in text
    )
    assert "| the search's own order | | 0.55 | 0.65 | 0.60 | 0.60 |" in text
    assert (
        "| Labeler rerank N=20 | none | **0.80** / 0.70 | **0.80** / 0.60 | **0.20** / 0.90 | **0.80** / 0.65 |"
        in text
    )
    # Per set, the best chosen row against the search: the left-out set's best chosen row (the
    # cross-encoder fused, 0.5) is below its search (0.6), and the report says so.
    assert "2wikimultihopqa: Labeler rerank N=20 (none) 0.80, at or above the search's 0.55" in text
    assert "hotpotqa (left out): rerank N=20 (rrf) 0.50, below the search's 0.60." in text


def test_no_left_out_set_means_no_left_out_column(bench, scored, tmp_path):
    pools = {f: pool(f) for f in FILES[:2]}
    _, info = bench.deployed_rerankers(ARGS, tmp_path, tmp_path, pools, tmp_path / "ce", [])
    assert "fusion_left_out" not in info
    text = "\n".join(bench.fusion_table(info["fusion"], info["fusion_validation"]))
    assert "left out" not in text and "| the search's own order | | 0.55 | 0.65 | 0.60 |" in text


def test_validation_only_writes_the_rerankers_table_and_its_inputs(bench, tmp_path):
    search = "the search's own order"
    info = {
        "recipe": "neg4-ep4",
        "fusion": {"rerank N=20": "rrf"},
        "fusion_validation": {
            "musique": {search: {"none": 50.0}, "rerank N=20": {"none": 40.0, "rrf": 52.5}}
        },
        "fusion_left_out": {"hotpotqa": {search: {"none": 60.0}, "rerank N=20": {"none": 55.0, "rrf": 58.0}}},
    }
    args = type("Args", (), {"retriever": "bm25"})()
    text = bench.write_validation_report(
        args, tmp_path, ["musique"], ["hotpotqa", "musique"], info, "python x", 0.0
    )
    written = tmp_path / "rerank-validation-musique_to_hotpotqa+musique.md"
    assert written.read_text() == text
    assert json.loads((tmp_path / "rerank-validation-musique_to_hotpotqa+musique.json").read_text()) == info
    assert (
        "recipe neg4-ep4" in text and "| rerank N=20 | rrf | 40.00 / **52.50** | 55.00 / **58.00** |" in text
    )
    assert "hotpotqa (left out): rerank N=20 (rrf) 58.00, below the search's 60.00." in text
