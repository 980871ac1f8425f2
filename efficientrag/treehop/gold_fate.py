"""Where each gold chunk of a TreeHop run ended, read from its predictions' traces.

* ``hop1``: kept by the question's own top-K (what Direct-R@K also has);
* ``later_hop``: kept at hop 2 or later: what the query updates added;
* ``pruned``: some query retrieved it, but the layer-wise top-K dropped it every time (the
  pruning, or the scores it compares, are at fault);
* ``never_retrieved``: no query of any hop had it in its top-K (the updated queries are at fault).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from efficientrag.retrieval.metrics import tally_fates

FATES = ("hop1", "later_hop", "pruned", "never_retrieved")
FATE_HEADERS = ("kept at hop 1", "kept at a later hop", "retrieved, pruned", "never in a query's top-K")


def fate_of_record(rec: Mapping[str, Any]) -> dict[str, str]:
    hops = rec["trace"]["hops"]
    kept_at = {cid: layer["hop"] for layer in hops for cid in layer["kept"]}
    seen = {hit["id"] for layer in hops for hits in layer["hits"] for hit in hits}
    return {gid: _fate(gid, kept_at, seen) for gid in rec["gold_chunk_ids"]}


def _fate(gid: str, kept_at: Mapping[str, int], seen: set[str]) -> str:
    if gid in kept_at:
        return "hop1" if kept_at[gid] == 0 else "later_hop"
    return "pruned" if gid in seen else "never_retrieved"


def count_fates(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    return tally_fates((fate_of_record(rec) for rec in records), FATES)


def fate_cells(counts: Mapping[str, int]) -> list[str]:
    total = max(counts.get("gold", 0), 1)
    return [f"{counts.get(k, 0)} ({100.0 * counts.get(k, 0) / total:.1f}%)" for k in FATES]
