"""Markdown tables from run summaries (the same columns for every method, so runs line up).

Three tables: retrieval (one row per cut-off of a ranked list, or per run, plus one per view),
QA (runs that answered) and cost (LLM calls, tokens, retrieval calls, latency per question).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from efficientrag.baselines.cost import latency_s
from efficientrag.eval.scoring import ALL

RETRIEVAL_HEADER = "| method | dataset | n | K (avg chunks) | recall | all-gold | answer recall |"
QA_HEADER = "| method | dataset | n | EM | F1 | contained | Acc |"
COST_HEADER = (
    "| method | dataset | n | LLM calls | prompt tokens | completion tokens | retrieval calls | latency s |"
)


def run_label(summary: dict[str, Any]) -> str:
    return str(summary.get("label") or summary.get("method", "?"))


def fmt(value: Any, digits: int = 2) -> str:
    return "–" if value is None else f"{float(value):.{digits}f}"


def n_cell(summary: dict[str, Any], n: Any) -> str:
    """The question count of a row; a run with failed questions says so in the cell itself, since
    its averages cover only the questions that succeeded."""
    failed = int(summary.get("num_failed") or 0)
    return f"{n} ({failed} failed)" if failed else f"{n}"


def failure_notes(summaries: Sequence[dict[str, Any]]) -> list[str]:
    notes = []
    for s in summaries:
        failed = int(s.get("num_failed") or 0)
        if failed:
            total = int(s.get("n", 0)) + failed
            notes.append(
                f"**{run_label(s)}: {failed} of {total} questions failed** and are not in these averages "
                "(reasons in `errors.jsonl`; rerunning the evaluation retries them)."
            )
    return notes


def retrieval_rows(summary: dict[str, Any]) -> list[str]:
    name = run_label(summary)
    labelled = [
        (name if cut == ALL else f"{name}@{cut}", agg)
        for cut, agg in (summary.get("retrieval") or {}).items()
    ]
    return _with_views(summary, "retrieval", labelled, _retrieval_row)


def _retrieval_row(label: str, dataset: str, agg: dict[str, Any], summary: dict[str, Any]) -> str:
    return (
        f"| {label} | {dataset} | {n_cell(summary, agg['n'])} | {agg['num_chunks']:.2f} | {agg['recall']:.2f} | "
        f"{agg['all_gold']:.2f} | {agg['answer_recall']:.2f} |"
    )


def qa_rows(summary: dict[str, Any]) -> list[str]:
    labelled = [(run_label(summary), summary["qa"])] if summary.get("qa") else []
    return _with_views(summary, "qa", labelled, _qa_row)


def _with_views(
    summary: dict[str, Any],
    section: str,
    labelled: list[tuple[str, dict[str, Any]]],
    row: Callable[[str, str, dict[str, Any], dict[str, Any]], str],
) -> list[str]:
    """The run's own rows, then one per view (``name[view]``) that has ``section``."""
    name = run_label(summary)
    for view, data in (summary.get("views") or {}).items():
        if data.get(section):
            labelled.append((f"{name}[{view}]", data[section]))
    dataset = summary.get("dataset", "")
    return [row(label, dataset, agg, summary) for label, agg in labelled]


def _qa_row(label: str, dataset: str, qa: dict[str, Any], summary: dict[str, Any]) -> str:
    return (
        f"| {label} | {dataset} | {n_cell(summary, qa['n'])} | {fmt(qa.get('em'))} | {fmt(qa.get('f1'))} | "
        f"{fmt(qa.get('contained'))} | {fmt(qa.get('acc'))} |"
    )


def cost_row(summary: dict[str, Any]) -> str:
    c = summary.get("counters_mean") or {}
    latency = latency_s(c)
    return (
        f"| {run_label(summary)} | {summary.get('dataset', '')} | {n_cell(summary, summary.get('n', 0))} | "
        f"{fmt(c.get('llm_calls', 0.0))} | {fmt(c.get('prompt_tokens', 0.0), 1)} | "
        f"{fmt(c.get('completion_tokens', 0.0), 1)} | {fmt(c.get('retrieval_calls', 0.0))} | {latency:.3f} |"
    )


def summary_table(summaries: Sequence[dict[str, Any]]) -> str:
    lines = [RETRIEVAL_HEADER, "|---|---|---|---|---|---|---|"]
    for s in summaries:
        lines.extend(retrieval_rows(s))
    qa = [row for s in summaries for row in qa_rows(s)]
    if qa:
        lines += ["", QA_HEADER, "|---|---|---|---|---|---|---|", *qa]
    lines += ["", COST_HEADER, "|---|---|---|---|---|---|---|---|", *(cost_row(s) for s in summaries)]
    notes = failure_notes(summaries)
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)
