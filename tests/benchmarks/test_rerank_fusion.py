"""Rerankers as deployed: each alone or fused with the search's order, the choice made on the
training files' validation questions, the search's own order scored beside them; on a left-out
set the row chosen on its corpus's pseudo-validation questions, checked on its validation questions."""

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
# The left-out corpus's pseudo-validation scores: the fused Labeler best on the mean of both kinds
# (0.75), though the cross-encoder alone leads on the chain questions.
PSEUDO = {
    "n": {"pseudo-validation": 3, "pseudo-single": 2},
    "scores": {
        "pseudo-validation": {
            "the search's own order": {"none": 0.5},
            "rerank N=20": {"none": 0.8, "rrf": 0.6}, "Labeler rerank N=20": {"none": 0.3, "rrf": 0.7},
            "rerank N=50": {"none": 0.1, "rrf": 0.2},
        },
        "pseudo-single": {
            "the search's own order": {"none": 0.7},
            "rerank N=20": {"none": 0.4, "rrf": 0.6}, "Labeler rerank N=20": {"none": 0.3, "rrf": 0.8},
            "rerank N=50": {"none": 0.1, "rrf": 0.2},
        },
    },
}  # fmt: skip


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

    def pseudo_scores(pool, models, reranker, out, progress):
        assert out == models / "validation" / f"pseudo-{pool.retriever}"
        loaded.append(f"pseudo {pool.retriever}")
        return PSEUDO

    monkeypatch.setattr(bench, "rerankers", rerankers)
    monkeypatch.setattr(bench, "pseudo_scores", pseudo_scores)
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


def test_a_left_out_set_deploys_what_its_corpus_pseudo_questions_choose(bench, scored, tmp_path):
    pools = {f: pool(f) for f in FILES[:2]}
    chosen, info = bench.deployed_rerankers(ARGS, tmp_path, tmp_path, pools, tmp_path / "ce", ["hotpotqa"])
    # HotpotQA's questions favour the fused Labeler (0.9 against 0.2), but the fusion stays the
    # training files' own; the row deployed there is the pseudo questions' choice.
    assert chosen["Labeler rerank N=20"] == "none" and info["fusion"] == chosen
    assert list(info["fusion_validation"]) == FILES[:2] and list(info["fusion_left_out"]) == ["hotpotqa"]
    assert info["pseudo"]["hotpotqa"]["chosen"] == ["Labeler rerank N=20", "rrf"]
    assert scored == [*FILES, "pseudo hotpotqa"]
    lines = bench.fusion_table(chosen, info["fusion_validation"], info["fusion_left_out"], info["pseudo"])
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
    assert "hotpotqa (left out): chosen on 3 pseudo-validation and 2 pseudo-single questions" in text
    assert "| Labeler rerank N=20 | 0.30 / **0.70** | 0.30 / **0.80** | 0.30 / **0.75** |" in text
    assert "| the search's own order | 0.50 | 0.70 | 0.60 |" in text
    # In domain the best of the rows (each fused as chosen) and the search on the set's own questions.
    assert "2wikimultihopqa: Labeler rerank N=20 (none) 0.80, at or above the search's 0.55" in text
    assert "hotpotqa (left out): Labeler rerank N=20 (rrf) 0.90, at or above the search's 0.60." in text


def test_in_domain_the_sets_own_validation_chooses_among_the_rows_and_the_search(bench):
    by_file = {
        "2wikimultihopqa": {
            bench.SEARCH_ROW: {"none": 40.0},
            "rerank N=20": {"none": 70.0, "rrf": 55.0},
            "Labeler rerank N=20": {"none": 30.0, "rrf": 50.0},
        },
        "musique": {
            bench.SEARCH_ROW: {"none": 35.0},
            "rerank N=20": {"none": 70.0, "rrf": 20.0},
            "Labeler rerank N=20": {"none": 30.0, "rrf": 35.0},
        },
    }
    fusion = {"rerank N=20": "rrf", "Labeler rerank N=20": "rrf"}
    train = ["2wikimultihopqa", "musique"]
    pseudo = {"hotpotqa": {"chosen": [bench.SEARCH_ROW, "none"]}}
    assert bench.deployed_row("2wikimultihopqa", train, fusion, by_file, pseudo) == ("rerank N=20", "rrf")
    # MuSiQue's own: the fused Labeler ties the search (35) and is kept; the cross-encoder alone (70)
    # counts only where validation chose it alone.
    assert bench.deployed_row("musique", train, fusion, by_file, pseudo) == ("Labeler rerank N=20", "rrf")
    alone = {"rerank N=20": "none", "Labeler rerank N=20": "rrf"}
    assert bench.deployed_row("musique", train, alone, by_file, pseudo) == ("rerank N=20", "none")
    by_file["musique"][bench.SEARCH_ROW]["none"] = 36.0
    assert bench.deployed_row("musique", train, fusion, by_file, pseudo) == (bench.SEARCH_ROW, "none")
    # Left out: its pseudo choice, whatever the training files say.
    assert bench.deployed_row("hotpotqa", train, fusion, by_file, pseudo) == (bench.SEARCH_ROW, "none")


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
        "pseudo": {
            "hotpotqa": {
                "n": {"pseudo-validation": 4},
                "scores": {
                    "pseudo-validation": {search: {"none": 30.0}, "rerank N=20": {"none": 20.0, "rrf": 25.0}}
                },
                "chosen": [search, "none"],
            }
        },
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
    assert "musique: rerank N=20 (rrf) 52.50, at or above the search's 50.00" in text
    assert "| the search's own order | **30.00** | **30.00** |" in text
    assert "hotpotqa (left out): no reranker, the search's own order 60.00." in text
