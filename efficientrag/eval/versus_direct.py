"""EfficientRAG's point against Direct-R's curve, on the same questions, corpus and retriever.

Two questions are asked of every run, and they are different:

* at equal chunk count, is the loop worth running? (its recall and all-gold rate against Direct-R's
  curve, interpolated at the loop's mean chunks per question);
* is it a cheaper replacement for the usual top-10? (at most 7 chunks, and Direct-R@10's recall
  and all-gold rate reached).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from efficientrag.eval.chunk_curve import curve_from_ranked, value_at
from efficientrag.eval.plots import Point, plot_recall_vs_chunks

METRICS = ("recall", "all_gold", "answer_recall")
METRIC_NAMES = {"recall": "recall", "all_gold": "all-gold", "answer_recall": "answer recall"}
MAX_CHUNKS = 7
REFERENCE_K = "10"


@dataclass(frozen=True)
class Versus:
    """One EfficientRAG run read against one Direct-R run."""

    chunks: float
    ours: dict[str, float]
    # Empty when the chunk count is outside Direct-R's measured cut-offs (nothing to compare with).
    direct_same_k: dict[str, float]
    direct_ref: dict[str, float]

    @property
    def above_curve(self) -> bool:
        return bool(self.direct_same_k) and all(
            self.ours[m] >= self.direct_same_k[m] for m in ("recall", "all_gold")
        )

    @property
    def replaces_top10(self) -> bool:
        return self.chunks <= MAX_CHUNKS and all(
            self.ours[m] >= self.direct_ref[m] for m in ("recall", "all_gold")
        )

    @property
    def all_gold_of_top10(self) -> bool:
        return self.chunks <= MAX_CHUNKS and self.ours["all_gold"] >= self.direct_ref["all_gold"]


def versus(direct: Mapping[str, Any], ours: Mapping[str, Any]) -> Versus:
    """``direct`` and ``ours`` are evaluation summaries (``summary.json``) of a ranked Direct-R run
    with several cut-offs and of an EfficientRAG run (``retrieval["all"]``)."""
    d = direct["retrieval"]
    e = ours["retrieval"]["all"]
    k = float(e["num_chunks"])
    try:
        same_k = {m: value_at(curve_from_ranked(d, m), k) for m in METRICS}
    except ValueError:
        same_k = {}
    return Versus(
        chunks=k,
        ours={m: float(e[m]) for m in METRICS},
        direct_same_k=same_k,
        direct_ref={m: float(d[REFERENCE_K][m]) for m in METRICS},
    )


def table(
    rows: Sequence[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]], ks: Sequence[int]
) -> list[str]:
    """Markdown: one row per (dataset, pool, Direct-R summary, EfficientRAG summary)."""
    cut = " / ".join(f"@{k}" for k in ks)
    lines = [
        f"| dataset | pool | n | Direct-R {cut}: recall | all-gold | answer recall | EfficientRAG K | "
        "recall | all-gold | answer recall | Direct-R at the same K: recall / all-gold / answer | "
        "at or above the curve | K <= 7 and >= Direct-R@10 (recall and all-gold) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, pool, direct, ours in rows:
        d = direct["retrieval"]
        v = versus(direct, ours)
        curves = [" / ".join(f"{d[str(k)][m]:.1f}" for k in ks) for m in METRICS]
        same = (
            " / ".join(f"{v.direct_same_k[m]:.1f}" for m in METRICS)
            if v.direct_same_k
            else "outside the curve"
        )
        top10 = "yes" if v.replaces_top10 else "all-gold only" if v.all_gold_of_top10 else "no"
        lines.append(
            f"| {name} | {pool} | {ours['retrieval']['all']['n']} | {' | '.join(curves)} | {v.chunks:.2f} | "
            + " | ".join(f"**{v.ours[m]:.2f}**" for m in METRICS)
            + f" | {same} | {'yes' if v.above_curve else 'no'} | {top10} |"
        )
    return lines


def plot(direct: Mapping[str, Any], ours: Mapping[str, Any], path: str | Path, *, title: str) -> Path:
    """Direct-R's three curves and EfficientRAG's three points on one chart."""
    d = direct["retrieval"]
    e = ours["retrieval"]["all"]
    curves = {f"Direct-R {METRIC_NAMES[m]}": sorted(curve_from_ranked(d, m).items()) for m in METRICS}
    points = [Point(f"EfficientRAG {METRIC_NAMES[m]}", float(e["num_chunks"]), float(e[m])) for m in METRICS]
    return plot_recall_vs_chunks(
        curves, points, [], path, title=title, ylabel="% of questions / gold chunks", match_colors=True
    )
