"""Markdown tables from run summaries (the same columns for every method, so runs line up)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from efficientrag.eval.scoring import ALL

RETRIEVAL_HEADER = "| method | dataset | n | K (avg chunks) | recall | all-gold | answer recall |"


def retrieval_rows(summary: dict[str, Any]) -> list[str]:
    rows = []
    name = summary.get("label") or summary.get("method", "?")
    dataset = summary.get("dataset", "")
    for cut, agg in (summary.get("retrieval") or {}).items():
        label = name if cut == ALL else f"{name}@{cut}"
        rows.append(
            f"| {label} | {dataset} | {agg['n']} | {agg['num_chunks']:.2f} | {agg['recall']:.2f} | "
            f"{agg['all_gold']:.2f} | {agg['answer_recall']:.2f} |"
        )
    return rows


def summary_table(summaries: Sequence[dict[str, Any]]) -> str:
    lines = [RETRIEVAL_HEADER, "|---|---|---|---|---|---|---|"]
    for s in summaries:
        lines.extend(retrieval_rows(s))
    return "\n".join(lines)
