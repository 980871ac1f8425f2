"""What the EfficientRAG loop did, hop by hop: the typed trace of a ``RetrievalResult``.

Readers (the trace printer, the framework adapters, timing and gold-fate reports) use attributes;
``to_dict()`` writes the JSON that predictions.jsonl and ``efficientrag retrieve --json`` have always
held, so files written before the trace was typed still read the same. Optional fields are left out
of the JSON when unset rather than written as null, as they always were.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from efficientrag.errors import InvalidArgumentError
from efficientrag.models.inputs import TAG_CONTINUE, TAG_TERMINATE


@dataclass
class HitRecord:
    """One retrieved chunk of one query, and what the Labeler said about it.

    ``seen``: the chunk was not judged again (already in the pool, or already judged for this query),
    so it has no tag. ``floor``: it is one of the question's own top ``floor_k`` hits, kept whatever
    its tag. ``labeled_words``: the chunk words the Labeler marked useful (the Filter's input).

    Attributes:
        id: The chunk's id.
        score: The retriever's score for the chunk and this query.
        seen: The chunk was not judged again, so it has no tag.
        floor: It is one of the question's own top ``floor_k`` first-hop hits.
        unjudged: It was new to the query, but the question's ``pair_budget`` was spent, so it has
            no tag.
        tag: ``"continue"`` or ``"terminate"`` (None when ``seen``).
        continue_prob: The Labeler's Continue probability (None when ``seen``).
        labeled_words: The chunk words the Labeler marked useful (None when ``seen``).
        exited_at: The Labeler layer the pair left at (early exit): ``continue_prob`` is then the
            exit head's estimate, the tag Terminate and no word labelled; None when judged in full.
    """

    id: str
    score: float
    seen: bool
    floor: bool = False
    unjudged: bool = False
    tag: str | None = None
    continue_prob: float | None = None
    labeled_words: list[str] | None = None
    exited_at: int | None = None

    @property
    def continued(self) -> bool:
        """Whether the Labeler tagged the chunk Continue for this query."""
        return self.tag == TAG_CONTINUE

    def judge(
        self, continue_prob: float, keep: bool, labeled_words: list[str], exited_at: int | None = None
    ) -> None:
        """Record the Labeler's decision on this hit (the loop calls it once per judged pair).

        Args:
            continue_prob: The Continue probability.
            keep: Whether it reached the tag threshold (tag Continue, else Terminate).
            labeled_words: The chunk words over the token threshold.
            exited_at: The layer the pair left the Labeler at (None: judged in full).
        """
        self.tag = TAG_CONTINUE if keep else TAG_TERMINATE
        self.continue_prob = continue_prob
        self.labeled_words = labeled_words
        self.exited_at = exited_at

    def to_dict(self) -> dict[str, Any]:
        """The hit as trace JSON (unset optional fields left out, as files have always held them).

        Returns:
            ``{"id", "score", "seen"}``, plus ``floor``, ``unjudged`` and ``exited_at`` when set and
            the tag fields once judged.
        """
        out: dict[str, Any] = {"id": self.id, "score": self.score, "seen": self.seen}
        if self.floor:
            out["floor"] = True
        if self.unjudged:
            out["unjudged"] = True
        if self.tag is not None:
            out.update(tag=self.tag, continue_prob=self.continue_prob, labeled_words=self.labeled_words)
        if self.exited_at is not None:
            out["exited_at"] = self.exited_at
        return out

    @classmethod
    def from_dict(cls, row: Mapping[str, Any], *, where: str = "hit") -> HitRecord:
        """A hit row read back from JSON; a row without its id, score or seen flag is an error that
        names ``where`` it was read from.

        Args:
            row: The hit's JSON object.
            where: Where the row came from, for the error message.

        Returns:
            The hit.

        Raises:
            ValueError: ``id``, ``score`` or ``seen`` is missing.
        """
        missing = [k for k in ("id", "score", "seen") if k not in row]
        if missing:
            raise InvalidArgumentError(
                f"{where}: field {missing[0]!r} missing; not an EfficientRAG trace hit"
            )
        return cls(
            id=row["id"],
            score=row["score"],
            seen=row["seen"],
            floor=bool(row.get("floor", False)),
            unjudged=bool(row.get("unjudged", False)),
            tag=row.get("tag"),
            continue_prob=row.get("continue_prob"),
            labeled_words=row.get("labeled_words"),
            exited_at=row.get("exited_at"),
        )


@dataclass
class Hop:
    """One hop of one question: its queries (one per open branch), each query's hits in rank order,
    the next-hop queries the Filter wrote, and the seconds this question's share of each stage took.

    ``timings_s`` holds ``retrieval``, ``labeler`` and ``filter`` (plus ``encode`` and ``search`` when
    the retriever reports them). ``truncated_query_words`` maps a query's index in ``queries`` to the
    number of its words the Labeler did not see (its input limit).

    Attributes:
        hop: The hop's 0-based number.
        queries: The queries searched (one per open branch).
        hits: Each query's hits, in rank order.
        next_queries: The next-hop queries the Filter wrote (new, non-empty ones only).
        timings_s: This question's share of each stage's seconds.
        truncated_query_words: Query index -> words the Labeler did not see.
    """

    hop: int
    queries: list[str]
    hits: list[list[HitRecord]]
    next_queries: list[str]
    timings_s: dict[str, float]
    truncated_query_words: dict[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The hop as the trace JSON of predictions.jsonl and ``efficientrag retrieve --json``.

        Returns:
            The fields as a dict, hits as :meth:`HitRecord.to_dict`; ``truncated_query_words`` only
            when a query was cut.
        """
        out: dict[str, Any] = {
            "hop": self.hop,
            "queries": self.queries,
            "hits": [[row.to_dict() for row in rows] for rows in self.hits],
            "next_queries": self.next_queries,
            "timings_s": self.timings_s,
        }
        if self.truncated_query_words:
            out["truncated_query_words"] = self.truncated_query_words
        return out


def trace_to_dicts(trace: list[Hop]) -> list[dict[str, Any]]:
    return [hop.to_dict() for hop in trace]


def stage_seconds(traces: list[list[Hop]]) -> dict[str, float]:
    """Seconds per stage summed over every hop of ``traces`` (one trace per question): ``encode``
    and ``search`` (a backend that does not split its time reports it all as ``retrieval``, counted
    as search here), ``labeler``, ``filter`` and ``rerank`` (the first-hop reranker's).

    Args:
        traces: The questions' traces (``RetrievalResult.trace``).
    """
    out = dict.fromkeys(("encode", "search", "labeler", "filter", "rerank"), 0.0)
    for trace in traces:
        for hop in trace:
            t = hop.timings_s
            for key in ("encode", "labeler", "filter", "rerank"):
                out[key] += t.get(key, 0.0)
            out["search"] += t["search"] if "search" in t else t.get("retrieval", 0.0)
    return out
