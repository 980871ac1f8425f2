"""Aggregates per-example records into the numbers the tables report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from efficientrag.eval.scoring import ALL

_RETRIEVAL_KEYS = ("recall", "all_gold", "answer_recall", "num_chunks", "num_chunks_with_dups")
_PERCENT = {"recall", "all_gold", "answer_recall"}


def summarize_records(records: Sequence[dict[str, Any]], *, ks: Sequence[int] = ()) -> dict[str, Any]:
    n = len(records)
    summary: dict[str, Any] = {"n": n}
    if n == 0:
        return summary
    ranked = all(r.get("ranked") for r in records)
    summary["ranked"] = ranked
    cutoffs = [str(k) for k in sorted(set(ks))] if ranked else [ALL]
    retrieval: dict[str, dict[str, float]] = {}
    for cut in cutoffs:
        rows = [r["retrieval"][cut] for r in records if cut in r.get("retrieval", {})]
        if not rows:
            continue
        agg = {"n": len(rows)}
        for key in _RETRIEVAL_KEYS:
            scale = 100.0 if key in _PERCENT else 1.0
            agg[key] = scale * sum(float(row[key]) for row in rows) / len(rows)
        retrieval[cut] = agg
    if retrieval:
        summary["retrieval"] = retrieval
    counters: dict[str, float] = {}
    for r in records:
        for key, value in (r.get("counters") or {}).items():
            counters[key] = counters.get(key, 0.0) + float(value)
    summary["counters_mean"] = {k: v / n for k, v in sorted(counters.items())}
    qa_rows = [r["qa"] for r in records if r.get("qa")]
    if qa_rows:
        keys = sorted({k for row in qa_rows for k in row})
        summary["qa"] = {k: 100.0 * sum(float(row.get(k, 0.0)) for row in qa_rows) / len(qa_rows) for k in keys}
        summary["qa"]["n"] = len(qa_rows)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_type.setdefault(r.get("type") or "", []).append(r)
    if len(by_type) > 1:
        summary["by_type"] = {
            t: {"n": len(rs)} | _type_recall(rs, cutoffs) for t, rs in sorted(by_type.items())
        }
    return summary


def _type_recall(records: Sequence[dict[str, Any]], cutoffs: Sequence[str]) -> dict[str, float]:
    out = {}
    for cut in cutoffs:
        rows = [r["retrieval"][cut] for r in records if cut in r.get("retrieval", {})]
        if rows:
            out[f"recall@{cut}"] = 100.0 * sum(float(x["recall"]) for x in rows) / len(rows)
    return out
