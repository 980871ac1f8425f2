"""The two comparison plots of a report (matplotlib, headless "Agg" backend, PNG files).

* quality against LLM calls per question: where each method sits between cost and accuracy;
* recall against the number of retrieved chunks: ranked methods as a curve over their cut-offs,
  iterative ones as points, the paper's Table 2 as hollow markers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MARKERS = ("s", "^", "D", "v", "P", "X", "<", ">")


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_quality_vs_calls(
    points: Sequence[Point], path: str | Path, *, metric: str = "F1", title: str = ""
) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for i, p in enumerate(points):
        ax.scatter([p.x], [p.y], s=40, marker=MARKERS[i % len(MARKERS)])
        ax.annotate(p.label, (p.x, p.y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("LLM calls per question")
    ax.set_ylabel(f"{metric} (%)")
    ax.set_title(title or f"{metric} vs LLM calls")
    ax.grid(alpha=0.3)
    return _save(fig, plt, path)


def plot_recall_vs_chunks(
    curves: dict[str, Sequence[tuple[float, float]]],
    points: Sequence[Point],
    paper_points: Sequence[Point],
    path: str | Path,
    *,
    title: str = "",
    ylabel: str = "oracle-chunk recall (%)",
    match_colors: bool = False,
) -> Path:
    """``match_colors``: point i takes curve i's colour (one method's point beside the baseline's
    curve of the same metric)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for label, xy in curves.items():
        xs, ys = zip(*sorted(xy), strict=True) if xy else ((), ())
        ax.plot(xs, ys, marker="o", markersize=4, label=label)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, p in enumerate(points):
        # Markers and colours both vary, so points that coincide (a view equal to its run) stay visible.
        color = colors[(i if match_colors else len(curves) + i) % len(colors)]
        ax.scatter(
            [p.x], [p.y], s=44, marker=MARKERS[i % len(MARKERS)], color=color, alpha=0.8, label=p.label
        )
    for p in paper_points:
        ax.scatter([p.x], [p.y], s=40, facecolors="none", edgecolors="gray")
        ax.annotate(
            p.label, (p.x, p.y), textcoords="offset points", xytext=(4, -10), fontsize=7, color="gray"
        )
    ax.set_xlabel("retrieved chunks per question (unique)")
    ax.set_ylabel(ylabel)
    ax.set_title(title or "recall vs number of chunks (hollow: paper)")
    ax.grid(alpha=0.3)
    if curves or points:
        ax.legend(fontsize=7, loc="lower right")
    return _save(fig, plt, path)


def _save(fig, plt, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
