"""benchmarks/budget_replay.py: a variant replayed from the traces of real run folders gives what a
run of the loop with that variant gives, the choice is made on validation only, and a run a replay
cannot stand for is refused by name."""

from __future__ import annotations

import dataclasses
import json

import pytest

from efficientrag.data.schema import Example
from efficientrag.eval.job_runs import evaluate_efficientrag_run
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import (
    ALPHA_QUESTION,
    OMEGA_QUESTION,
    STOPWORDS,
    InfoOnlyFilter,
    ScriptedLabeler,
    bridge_corpus,
)
from efficientrag.testing.scripted_models import USEFUL_WORDS as USEFUL
from efficientrag.testing.word_overlap import WordOverlapRetriever

BENCHMARK = "budget_replay"
BOTH = "Which film was directed by Alpha or Omega?"
GRADED = {"Omega": 0.2, "Paris": 0.4, "Carla": 0.3, "Noise": 0.05, "Bob": 0.1}
VALIDATION = [
    Example(id="v1", question=ALPHA_QUESTION, answers=[], gold_chunk_ids=["alpha", "bob", "paris"]),
    Example(id="v2", question=OMEGA_QUESTION, answers=[], gold_chunk_ids=["omega", "carla"]),
]
DEV = [Example(id="d1", question=BOTH, answers=[], gold_chunk_ids=["alpha", "omega", "paris"])]
BASE = EfficientRAGConfig(
    top_k=3, max_hops=4, chunk_budget=3, budget_policy="best", floor_k=1, fill_budget=True
)


@pytest.fixture()
def runs(tmp_path):
    labeler = ScriptedLabeler(USEFUL, {"Alpha": 0.9, "Bob": 0.7, "Omega": 0.8, "Carla": 0.6}, rejected=GRADED)
    rag = EfficientRAG(WordOverlapRetriever(bridge_corpus(), STOPWORDS), labeler, InfoOnlyFilter(), BASE)
    for model, name in ((rag.labeler, "L"), (rag.filter, "F")):
        (tmp_path / name).mkdir()
        model.source = str(tmp_path / name)

    def run(cfg: EfficientRAGConfig, split: str, examples, name: str = "setting"):
        folder = tmp_path / split / name
        summary = evaluate_efficientrag_run(cfg, rag.retriever, examples, folder, rag=rag, progress=False)
        return summary.run_dir, summary["retrieval"]["all"]

    return run


def test_the_replay_equals_runs_of_each_variant_and_chooses_on_validation(bench, runs, capsys):
    val, val_own = runs(BASE, "validation", VALIDATION)
    dev, _ = runs(BASE, "dev", DEV)
    assert bench.main(["--validation", str(val), "--dev", str(dev)]) == 0
    out = capsys.readouterr().out
    rows = {
        line.split(" | ")[0].strip("| *").split(":")[0]: line
        for line in out.splitlines()
        if line.startswith("| ")
    }
    assert rows["recorded"].count(f"{val_own['recall']:.1f} / {val_own['all_gold']:.1f} (3.00)") == 1
    for name in ("fill-labeled", "fill-labeled-r0.2"):
        cfg = bench.with_changes(BASE, bench.VARIANTS[name])
        _, got_val = runs(cfg, "validation", VALIDATION, name)
        _, got_dev = runs(cfg, "dev", DEV, name)
        cells = [
            f"{s['recall']:.1f} / {s['all_gold']:.1f} ({s['num_chunks']:.2f})" for s in (got_val, got_dev)
        ]
        assert all(c in rows[name] for c in cells), (name, cells, rows[name])
    results, chosen = bench.compare([bench.read_run(val)], [bench.read_run(dev)], bench.VARIANTS)
    assert f"**{chosen}" in out and results[chosen]["score"] == max(r["score"] for r in results.values())
    # paris (0.4, found by the second hop) fills before omega, the question's own next hit (0.2);
    # every weighted variant ties it, and a tie goes to the first listed.
    assert chosen == "fill-labeled" and results["recorded"]["score"] < results[chosen]["score"]
    # The choice reads validation only: the dev rows do not move it.
    assert bench.compare([bench.read_run(val)], [], bench.VARIANTS)[1] == chosen
    assert "Command: `python benchmarks/budget_replay.py --validation" in out


def test_a_run_the_replay_cannot_stand_for_is_refused_by_name(bench, runs, capsys):
    val, _ = runs(BASE, "validation", VALIDATION)
    rows = [json.loads(line) for line in (val / "predictions.jsonl").read_text().splitlines()]
    rows[1]["retrieved_ids"] = list(reversed(rows[1]["retrieved_ids"]))
    (val / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert bench.main(["--validation", str(val)]) == 2
    assert "record 2 (id 'v2'): its own setting replays to" in capsys.readouterr().err

    first, _ = runs(
        dataclasses.replace(BASE, budget_policy="first", fill_budget=False), "validation", VALIDATION, "first"
    )
    with pytest.raises(ValueError, match="budget_policy='first' stops the loop at its budget"):
        bench.read_run(first)
    with pytest.raises(ValueError, match="'top_k' changes the loop's hops"):
        bench.with_changes(BASE, ["top_k=5"])
    unbudgeted = EfficientRAGConfig(top_k=3)  # "first" by default: a budget would stop its hops
    with pytest.raises(ValueError, match="chunk_budget=3: a budget under budget_policy='first'"):
        bench.with_changes(unbudgeted, ["chunk_budget=3"])
    other, _ = runs(dataclasses.replace(BASE, chunk_budget=4), "dev", DEV, "other")
    good, _ = runs(BASE, "validation", VALIDATION, "good")
    with pytest.raises(ValueError, match="the runs hold different settings or models"):
        bench.compare([bench.read_run(good)], [bench.read_run(other)], {})
