"""The report of ``benchmarks/retrieval_treehop.py``: validation choice, dev tables, gold fates, plots."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from report_output import heading

from efficientrag.eval.chunk_curve import curve_from_ranked, value_at
from efficientrag.eval.gold_fate import fate_table_head
from efficientrag.eval.plots import Point, plot_recall_vs_chunks
from efficientrag.treehop.gold_fate import FATE_HEADERS, fate_cells

DIRECT_KS = ("5", "7", "10", "20")
BM25_KS = ("5", "10")


def render(
    *,
    command: str,
    minutes: float,
    train_on: list[str],
    train_metrics: dict[str, Any],
    model_dir: Path,
    chosen: str,
    validation: dict[str, Any],
    combination: tuple[Any, Any],
    results: dict[str, dict[str, Any]],
    settings: dict[str, tuple[int, int]],
    plot_dir: Path,
) -> str:
    info = train_metrics.get("training_data", {})
    per_file = ", ".join(
        f"{name} {p['train_questions_with_edges']} questions / {p['train_targets']} targets"
        for name, p in info.get("pools", {}).items()
    )
    lines = [
        *heading(
            "## TreeHop beside EfficientRAG and Direct-R on one dense index (all-MiniLM-L6-v2 + FAISS Flat)",
            command,
            minutes,
        ),
        f"TreeHop trained on the train files of {', '.join(train_on)} (training side: {per_file}); "
        f"training variant **{train_metrics.get('variant')}**, epoch {train_metrics.get('best_epoch')} of "
        f"{train_metrics.get('epochs')}, both chosen by the tree search (TreeHop@5, 2 hops) on the validation "
        f"questions (score {_f(train_metrics.get('best_score'))}); model `{model_dir}`. K and hops chosen on "
        f"the same validation questions: **{chosen}** (largest gain over Direct-R at the same chunk count). "
        "No dev question was used to choose anything.",
        "",
        "| training variant | parameters | best epoch | validation score (mean over files of (recall + all-gold) / 2) |",
        "|---|---:|---:|---:|",
        *[
            f"| {'**' + n + '**' if n == train_metrics.get('variant') else n} | {v['parameters']:,} | "
            f"{v['best_epoch']} / {v['epochs']} | {_f(v['best_score'])} |"
            for n, v in train_metrics.get("variants", {}).items()
        ],
        "",
    ]
    curve = train_metrics.get("data_curve") or {}
    if len(curve) > 1:
        lines += [
            f"Data size ({train_metrics.get('variant')}, the same validation questions): "
            + ", ".join(
                f"{n} training questions: {_f(v['best_score'])}"
                for n, v in sorted(curve.items(), key=lambda kv: int(kv[0]))
            )
            + ".",
            "",
        ]
    held = [d for d in results if d not in train_on]
    if held:
        lines += [
            f"Transfer: no question of {', '.join(held)} trained or chose anything; its dev questions are "
            "reported over its own pooled dev corpus.",
            "",
        ]
    lines += _validation_table(validation, chosen)
    combo_setting, combo = combination
    if combo is not None:
        from treehop_combination import validation_rows

        lines += validation_rows(combo, combo_setting)
    lines += ["### Dev questions (never seen by any step)", ""]
    fates = []
    for name, pools in results.items():
        for pool_name, res in pools.items():
            lines += [f"**{name}, {pool_name}**", ""]
            lines += _dev_table(res, chosen)
            png = _plot(name, pool_name, res, plot_dir)
            lines += ["", f"![{name}, {pool_name}]({png.name})", ""]
            for label, counts in res["fates"].items():
                fates.append(
                    f"| {name} | {pool_name} | {label} | {counts['gold']} | "
                    + " | ".join(fate_cells(counts))
                    + " |"
                )
    lines += [
        "### Where TreeHop's gold chunks went",
        "",
        *fate_table_head("dataset", "pool", "setting", fates=FATE_HEADERS),
        *fates,
        "",
    ]
    return "\n".join(lines)


def _validation_table(validation: dict[str, Any], chosen: str) -> list[str]:
    table = validation["table"]
    names = list(next(iter(table.values())))
    lines = [
        "### Validation (training files' held-out questions, each over its own corpus)",
        "",
        "Each cell: recall / all-gold at K chunks per question (gain over Direct-R at the same K).",
        "",
        "| setting | " + " | ".join(names) + " | score (mean gain) |",
        "|---|" + "---|" * len(names) + "---|",
    ]
    for label, per in table.items():
        cells = []
        for name in names:
            e, g = per[name]["summary"]["retrieval"]["all"], per[name]["gain"]
            cells.append(
                f"{e['recall']:.1f} / {e['all_gold']:.1f} @ {e['num_chunks']:.2f} "
                f"({g['recall']:+.1f} / {g['all_gold']:+.1f})"
            )
        row = f"**{label}** (chosen)" if label == chosen else label
        lines.append(f"| {row} | " + " | ".join(cells) + f" | {validation['scores'][label]:+.2f} |")
    cells = []
    for name in names:
        d = validation["direct"][name]["retrieval"]
        cells.append(
            " ; ".join(f"@{k} {d[k]['recall']:.1f} / {d[k]['all_gold']:.1f}" for k in ("5", "10", "20"))
        )
    lines += ["| Direct-R | " + " | ".join(cells) + " | |", ""]
    return lines


def _dev_table(res: dict[str, Any], chosen: str) -> list[str]:
    direct = res["direct"]
    lines = [
        "| method | index | chunks / q | recall | all-gold | answer recall | Direct-R (dense) at the same K: "
        "recall / all-gold | Δ recall | Δ all-gold |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for k in DIRECT_KS:
        lines.append(_row(f"Direct-R@{k}", "dense", direct["retrieval"][k], None))
    missing = "not run: `python benchmarks/retrieval_efficientrag.py --retriever dense` first"
    lines.append(_efficientrag_row(res.get("efficientrag"), "", "dense", direct, missing))
    for label, summary in res["treehop"].items():
        name = f"**{label}** (chosen)" if label == chosen else label
        lines.append(_row(name, "dense", summary["retrieval"]["all"], direct))
    if res.get("combination"):
        combo = res["combination"]
        lines.append(
            _row(f"{combo['label']} (chosen)", "dense", combo["summary"]["retrieval"]["all"], direct)
        )
    bm25 = res.get("bm25") or {}
    if bm25:
        for k in BM25_KS:
            lines.append(_row(f"Direct-R@{k} (reference)", "BM25", bm25["direct"]["retrieval"][k], None))
        lines.append(_efficientrag_row(bm25.get("efficientrag"), "reference", "BM25", None, "not run"))
    return lines


def _efficientrag_row(
    result: dict[str, Any] | None, note: str, index: str, direct: dict[str, Any] | None, missing: str
) -> str:
    """EfficientRAG's row at its chosen setting, or a row saying why it has none."""
    if not result:
        return f"| EfficientRAG{f' ({note})' if note else ''} | {index} | {missing} | | | | | | |"
    label = f"EfficientRAG ({f'{note}, ' if note else ''}chosen `{result['setting']}`)"
    return _row(label, index, result["efficientrag"]["retrieval"]["all"], direct)


def _row(label: str, index: str, agg: dict[str, float], direct: dict[str, Any] | None) -> str:
    same = delta_r = delta_g = ""
    if direct is not None:
        try:
            r = value_at(curve_from_ranked(direct["retrieval"], "recall"), agg["num_chunks"])
            g = value_at(curve_from_ranked(direct["retrieval"], "all_gold"), agg["num_chunks"])
            same, delta_r, delta_g = (
                f"{r:.1f} / {g:.1f}",
                f"{agg['recall'] - r:+.1f}",
                f"{agg['all_gold'] - g:+.1f}",
            )
        except ValueError:
            same = "outside the curve"
    return (
        f"| {label} | {index} | {agg['num_chunks']:.2f} | {agg['recall']:.2f} | {agg['all_gold']:.2f} | "
        f"{agg['answer_recall']:.2f} | {same} | {delta_r} | {delta_g} |"
    )


def _plot(name: str, pool_name: str, res: dict[str, Any], plot_dir: Path) -> Path:
    curves = {"Direct-R (dense)": sorted(curve_from_ranked(res["direct"]["retrieval"], "recall").items())}
    bm25 = res.get("bm25") or {}
    if bm25:
        curves["Direct-R (BM25, reference)"] = sorted(
            curve_from_ranked(bm25["direct"]["retrieval"], "recall").items()
        )
    points = [
        Point(label, s["retrieval"]["all"]["num_chunks"], s["retrieval"]["all"]["recall"])
        for label, s in res["treehop"].items()
        if "diagnostic" not in label
    ]
    for label, eff in (
        ("EfficientRAG (dense)", res.get("efficientrag")),
        ("EfficientRAG (BM25, reference)", bm25.get("efficientrag")),
    ):
        if eff:
            agg = eff["efficientrag"]["retrieval"]["all"]
            points.append(Point(label, agg["num_chunks"], agg["recall"]))
    slug = re.sub(r"[^a-z0-9]+", "-", f"treehop {name} {pool_name.split(' (')[0]}".lower()).strip("-")
    return plot_recall_vs_chunks(
        curves, points, [], plot_dir / f"{slug}.png", title=f"{name}, {pool_name}: recall vs chunks"
    )


def _f(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"
