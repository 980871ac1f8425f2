"""TreeHop's hop trace as typed records: every hop's queries, hits and kept chunks.

A TreeHop query is a vector, not text; it is named by the chunks it was formed from (``[]`` for
the question, ``[a]`` for TreeHop(question, a), ``[a, b]`` for the query formed from ``b`` after
``a``). ``to_dict`` gives the JSON form stored in evaluation records, shaped like EfficientRAG's
(``hop``, ``queries``, ``hits``, ``timings_s``) so the same readers can walk both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TreeHopHit:
    id: str
    score: float
    # Joined the result at this hop (first time this question output the chunk).
    kept: bool
    # Formed a query for the next hop.
    expanded: bool
    # Why it was not expanded: "redundant" (already output), "pruned" (outside the layer's top-K).
    pruned: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "score": self.score, "kept": self.kept, "expanded": self.expanded}
        if self.pruned:
            d["pruned"] = self.pruned
        return d


@dataclass(frozen=True)
class TreeHopLayer:
    hop: int  # 0-based, as in EfficientRAG's trace
    queries: list[list[str]]  # per query: the chunk ids it was formed from
    hits: list[list[TreeHopHit]]  # per query, in rank order
    kept: list[str]  # chunk ids this hop added to the result
    timings_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hop": self.hop,
            "queries": [" > ".join(["question", *path]) for path in self.queries],
            "query_paths": [list(p) for p in self.queries],
            "hits": [[h.to_dict() for h in hits] for hits in self.hits],
            "kept": list(self.kept),
            "timings_s": dict(self.timings_s),
        }
