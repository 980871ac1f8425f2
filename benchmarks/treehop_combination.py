"""TreeHop proposes, EfficientRAG's Tagger judges (``efficientrag.treehop.tagged``), chosen and
reported under the same protocol as both methods: its setting (TreeHop K and hops, tag threshold,
floor) chosen on the validation questions of the training files with EfficientRAG's score and chunk
budget (7), its Labeler the one ``retrieval_efficientrag.py --retriever dense`` trained."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BUDGET = 7  # EfficientRAG's chunk budget in the protocol's grid
GRID = [(k, hops, t, f) for k, hops in ((5, 2), (10, 2)) for t in (0.05, 0.2, 0.5) for f in (3, 5)]


def label_of(k: int, hops: int, threshold: float, floor: int) -> str:
    return f"TreeHop@{k}, {hops} hops + Tagger (t{threshold}, floor {floor}, budget {BUDGET})"


def load_labeler(models: Path) -> Any | None:
    """EfficientRAG's Labeler (memoized predictions: the grid reads the same pairs many times)."""
    from efficientrag.models import Labeler
    from efficientrag.pipeline.prediction_cache import CachedPredictor

    folder = models / "labeler" / "best"
    if not folder.is_dir():
        return None
    return CachedPredictor(Labeler.from_pretrained(folder, device="cpu"))


def run_folder(out: Path, setting: tuple) -> Path:
    """Where ``evaluate`` keeps the run of ``setting`` under ``out``."""
    k, hops, threshold, floor = setting
    return out / f"k{k}-h{hops}-t{threshold}-f{floor}-b{BUDGET}"


def evaluate(
    pool: Any, model: Any, labeler: Any, examples: list, out: Path, setting: tuple
) -> dict[str, Any]:
    from efficientrag.baselines.treehop import TaggedTreeHopRetrieval
    from efficientrag.eval.runner import run_method
    from efficientrag.experiment.run_binding import index_and_data
    from efficientrag.treehop.config import TreeHopRetrievalConfig
    from efficientrag.treehop.retriever import TreeHopRetriever
    from efficientrag.treehop.tagged import TaggedTreeHop, TagSettings

    k, hops, threshold, floor = setting
    search = TreeHopRetriever(pool.retriever, model, TreeHopRetrievalConfig(top_k=k, hops=hops))
    tagged = TaggedTreeHop(
        search, labeler, TagSettings(tag_threshold=threshold, floor_k=floor, chunk_budget=BUDGET)
    )
    folder = run_folder(out, setting)
    # The folder names the models (their fingerprints) and the setting; the record binds them all.
    bound = {"method": "treehop+tagger", "setting": list(setting), **index_and_data(pool.retriever, examples)}
    return run_method(
        TaggedTreeHopRetrieval(tagged),
        examples,
        folder,
        ks=(),
        batch_size=32,
        progress=False,
        fingerprint=bound,
    )


def choose(
    validation: dict[str, tuple[Any, list]], model: Any, labeler: Any, out: Path
) -> tuple[tuple, dict]:
    """Every grid setting on every training file's validation questions; the protocol score wins."""
    table: dict[str, dict[str, Any]] = {}
    scores: dict[str, float] = {}
    for setting in GRID:
        label = label_of(*setting)
        per = {
            name: evaluate(pool, model, labeler, val, out / name, setting)
            for name, (pool, val) in validation.items()
        }
        table[label] = per
        rows = [p["retrieval"]["all"] for p in per.values()]
        scores[label] = sum((r["recall"] + r["all_gold"]) / 2 for r in rows) / len(rows)
    best = max(GRID, key=lambda s: scores[label_of(*s)])
    return best, {"table": table, "scores": scores}


def validation_rows(combo: dict[str, Any], chosen: tuple) -> list[str]:
    table, scores = combo["table"], combo["scores"]
    names = list(next(iter(table.values())))
    lines = [
        "### TreeHop + Tagger: validation (same questions; score = mean over files of (recall + all-gold) / 2, "
        "as EfficientRAG's grid)",
        "",
        "| setting | " + " | ".join(f"{n} recall / all-gold / K" for n in names) + " | score |",
        "|---|" + "---|" * len(names) + "---|",
    ]
    best = label_of(*chosen)
    for label, per in table.items():
        cells = [
            f"{r['recall']:.1f} / {r['all_gold']:.1f} / {r['num_chunks']:.2f}"
            for r in (per[n]["retrieval"]["all"] for n in names)
        ]
        name = f"**{label}** (chosen)" if label == best else label
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {scores[label]:.2f} |")
    return [*lines, ""]
