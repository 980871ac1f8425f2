"""Where each gold chunk of an EfficientRAG run ended, read from its predictions' traces.

Recall lost by the loop has three different causes, each with a different fix:

* ``never_retrieved``: no hop's query brought the chunk into its top-k (the queries, i.e. the
  Filter and the retriever, are at fault);
* ``tagged_terminate``: it was retrieved, but every time the Labeler tagged it Terminate (the
  Tagger's decision or its threshold is at fault);
* ``over_budget``: tagged Continue at least once, then trimmed by the chunk budget (the budget,
  or the ranking inside it, is at fault).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from efficientrag.errors import InvalidArgumentError
from efficientrag.pipeline.trace import HitRecord
from efficientrag.retrieval.metrics import tally_fates as _tally

FATES = ("kept", "tagged_terminate", "over_budget", "never_retrieved")


def fate_of_record(rec: Mapping[str, Any], *, where: str = "record") -> dict[str, str]:
    """Gold chunk id -> its fate in one prediction record (needs ``trace.hops[*].hits``); a malformed
    hit is an error that names ``where`` the record came from."""
    kept = set(rec["retrieved_ids"])
    seen: set[str] = set()
    continued: set[str] = set()
    for h, hop in enumerate(rec["trace"]["hops"]):
        for rows in hop["hits"]:
            for hit in (HitRecord.from_dict(row, where=f"{where}: trace.hops[{h}]") for row in rows):
                seen.add(hit.id)
                if hit.continued:
                    continued.add(hit.id)
    out = {}
    for gid in rec["gold_chunk_ids"]:
        if gid in kept:
            out[gid] = "kept"
        elif gid in continued:
            out[gid] = "over_budget"
        elif gid in seen:
            out[gid] = "tagged_terminate"
        else:
            out[gid] = "never_retrieved"
    return out


def count_fates(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    return tally_fates(fate_of_record(rec) for rec in records)


def tally_fates(
    fates_per_record: Iterable[Mapping[str, str]], fates: Iterable[str] = FATES
) -> dict[str, int]:
    """``gold`` (every gold chunk) and how many met each fate; ``fates`` are the kinds counted."""
    return _tally(fates_per_record, fates)


def gold_fate(predictions: str | Path) -> dict[str, int]:
    """Counts over a ``predictions.jsonl`` written by an EfficientRAG evaluation."""
    path = Path(predictions)
    fates = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            rec = json.loads(line)
            where = f"{path}:{lineno} (id {rec.get('id')!r})"
            if "trace" not in rec or "hops" not in (rec["trace"] or {}):
                raise InvalidArgumentError(
                    f"{where}: field 'trace.hops' missing; gold fate needs an EfficientRAG run's predictions"
                )
            fates.append(fate_of_record(rec, where=where))
    return tally_fates(fates)


def fate_percentages(counts: Mapping[str, int]) -> dict[str, float]:
    total = max(counts.get("gold", 0), 1)
    return {k: 100.0 * counts.get(k, 0) / total for k in FATES}


FATE_HEADERS = (
    "kept",
    "retrieved, always tagged Terminate",
    "tagged Continue, cut by the chunk budget",
    "never in a hop's top-k",
)


def fate_table_head(*columns: str, fates: Sequence[str] = FATE_HEADERS) -> list[str]:
    """The two markdown lines above fate rows: ``columns`` (what names a row), "gold chunks", the
    fates (TreeHop's differ: it has no tags)."""
    return [
        "| " + " | ".join((*columns, "gold chunks", *fates)) + " |",
        "|" + "---|" * (len(columns) + 1 + len(fates)),
    ]


def fate_cells(counts: Mapping[str, int]) -> list[str]:
    """Markdown cells "count (share%)" in the order of ``FATE_HEADERS``."""
    pct = fate_percentages(counts)
    return [f"{counts.get(k, 0)} ({pct[k]:.1f}%)" for k in FATES]
