"""Aggregates per-example records into the numbers the tables report.

Retrieval and QA rates are percentages, chunk counts and cost counters plain means per question.
A QA metric is averaged over the records that have it (``acc`` only exists where a judge ran;
``qa.n_acc`` says how many). ``judge_failures`` counts judge replies that said neither yes nor no
(scored as incorrect). Views (``record["views"]``) are aggregated the same way under
``summary["views"]``. Each question id counts once: of records sharing an id (two writers on one
folder, before folders were locked) the first is the one counted.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from efficientrag.eval.scoring import ALL

_RETRIEVAL_KEYS = ("recall", "all_gold", "answer_recall", "num_chunks", "num_chunks_with_dups")
_PERCENT = {"recall", "all_gold", "answer_recall"}
QA_KEYS = ("em", "f1", "contained", "acc")


def summarize_records(records: Sequence[dict[str, Any]], *, ks: Sequence[int] = ()) -> dict[str, Any]:
    records = first_per_id(records)
    n = len(records)
    summary: dict[str, Any] = {"n": n}
    if n == 0:
        return summary
    ranked = all(r.get("ranked") for r in records)
    summary["ranked"] = ranked
    cutoffs = [str(k) for k in sorted(set(ks))] if ranked else [ALL]
    retrieval: dict[str, dict[str, float]] = {}
    for cut in cutoffs:
        agg = aggregate_retrieval([r["retrieval"][cut] for r in records if cut in r.get("retrieval", {})])
        if agg:
            retrieval[cut] = agg
    if retrieval:
        summary["retrieval"] = retrieval
    counters: dict[str, float] = {}
    for r in records:
        for key, value in (r.get("counters") or {}).items():
            counters[key] = counters.get(key, 0.0) + float(value)
    summary["counters_mean"] = {k: v / n for k, v in sorted(counters.items())}
    qa = aggregate_qa([r["qa"] for r in records if r.get("qa")])
    if qa:
        summary["qa"] = qa
    views = _views(records)
    if views:
        summary["views"] = views
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_type.setdefault(r.get("type") or "", []).append(r)
    if len(by_type) > 1:
        summary["by_type"] = {
            t: {"n": len(rs)} | _type_scores(rs, cutoffs) for t, rs in sorted(by_type.items())
        }
    return summary


def first_per_id(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first record of each ``id`` (records without one are all kept), in their order."""
    seen: set[str] = set()
    out = []
    for r in records:
        if "id" in r:
            if str(r["id"]) in seen:
                continue
            seen.add(str(r["id"]))
        out.append(r)
    return out


def aggregate_retrieval(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    return {"n": len(rows), **_column_means(rows, _RETRIEVAL_KEYS, _PERCENT)} if rows else {}


def aggregate_qa(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    if not rows:
        return {}
    out: dict[str, float] = {"n": len(rows), **_column_means(rows, QA_KEYS, QA_KEYS)}
    judged = [row for row in rows if "acc" in row]
    if judged:
        out["n_acc"] = len(judged)
        out["judge_failures"] = sum(float(row.get("judge_failed", 0.0)) for row in judged)
    return out


def _views(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    names: list[str] = []
    for r in records:
        for name in r.get("views") or {}:
            if name not in names:
                names.append(name)
    out: dict[str, Any] = {}
    for name in names:
        scored = [r["views"][name] for r in records if name in (r.get("views") or {})]
        view: dict[str, Any] = {"n": len(scored)}
        retrieval = aggregate_retrieval([s["retrieval"] for s in scored if "retrieval" in s])
        if retrieval:
            view["retrieval"] = retrieval
        qa = aggregate_qa([s["qa"] for s in scored if "qa" in s])
        if qa:
            view["qa"] = qa
        out[name] = view
    return out


def _type_scores(records: Sequence[dict[str, Any]], cutoffs: Sequence[str]) -> dict[str, float]:
    out = {}
    for cut in cutoffs:
        rows = [r["retrieval"][cut] for r in records if cut in r.get("retrieval", {})]
        if rows:
            out[f"recall@{cut}"] = 100.0 * sum(float(x["recall"]) for x in rows) / len(rows)
    qa = aggregate_qa([r["qa"] for r in records if r.get("qa")])
    for key in ("em", "f1", "contained", "acc"):
        if key in qa:
            out[key] = qa[key]
    return out


def _column_means(
    rows: Sequence[dict[str, Any]], keys: Sequence[str], percent: Collection[str]
) -> dict[str, float]:
    """Each key's mean over the rows that have it (a QA score only judged rows carry counts only
    there); keys in ``percent`` as percentages."""
    out = {}
    for key in keys:
        values = [float(row[key]) for row in rows if key in row]
        if values:
            out[key] = (100.0 if key in percent else 1.0) * sum(values) / len(values)
    return out
