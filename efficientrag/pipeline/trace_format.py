"""Readable rendering of an EfficientRAG trace for ``efficientrag retrieve``."""

from __future__ import annotations

from efficientrag.pipeline.efficientrag import RetrievalResult
from efficientrag.text.words import join_words


def format_result(result: RetrievalResult, *, max_hits: int = 10) -> str:
    lines = [f"Question: {result.question}"]
    for hop in result.trace:
        t = hop.timings_s
        lines.append(
            f"\nHop {hop.hop + 1}  (retrieval {1000 * t['retrieval']:.0f} ms, Labeler "
            f"{1000 * t['labeler']:.0f} ms, Filter {1000 * t['filter']:.0f} ms)"
        )
        for query, rows in zip(hop.queries, hop.hits, strict=True):
            lines.append(f"  query: {query}")
            for row in rows[:max_hits]:
                if row.seen:
                    lines.append(f"    . {row.id:<24} already judged")
                    continue
                mark = "+" if row.continued else "-"
                words = join_words(row.labeled_words or [])
                lines.append(
                    f"    {mark} {row.id:<24} p(continue)={row.continue_prob:.2f}"
                    + (f"  labeled: {words}" if words and row.continued else "")
                )
        for nq in hop.next_queries:
            lines.append(f"  next query: {nq}")
    lines.append(f"\nKept {len(result.chunks)} chunks:")
    for c in result.chunks:
        text = c.contents if len(c.contents) <= 160 else c.contents[:157] + "..."
        lines.append(f"  [{c.id}] {text}")
    return "\n".join(lines)
