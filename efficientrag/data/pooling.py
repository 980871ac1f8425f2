"""Pooling: every context paragraph of one or more read files into one de-duplicated corpus.

This is how the official EfficientRAG corpus is built (the distractor setting, not full
Wikipedia): the same Wikipedia paragraph recurs across questions and must be one chunk, or a
retriever returns copies and recall counts it twice. Two paragraphs are the same chunk when their
``dedup_key`` (case-folded, non-word characters dropped) agrees; the first one seen keeps its id and
``id_map`` sends every original id to the id it became. Pooling several datasets together gives the
combined pool (more distractors per question).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.errors import SkippedRecord
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.schema import Chunk, Example
from efficientrag.errors import DataFormatError
from efficientrag.text.normalize import dedup_key


@dataclass
class PooledDataset:
    """One or more read files pooled into one de-duplicated corpus: what every later stage reads.

    Attributes:
        corpus: The de-duplicated chunks (first seen keeps its id).
        examples: Every question, its gold and context ids pointing into ``corpus``.
        id_map: Each original chunk id -> the id it became in ``corpus``.
        skipped: The records lenient reads left out.
        stats: Sizes before and after de-duplication (see :func:`pool_stats`).
    """

    corpus: Corpus
    examples: list[Example]
    id_map: dict[str, str] = field(default_factory=dict)
    skipped: list[SkippedRecord] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def pool(results: Sequence[ReadResult]) -> PooledDataset:
    """Merge the chunks of read files into one corpus, so a paragraph shared by questions (or by
    datasets) is one chunk, and point every example's ids at it.

    Args:
        results: Read files, in order; a chunk seen first keeps its id.

    Returns:
        The pooled dataset.

    Raises:
        DataFormatError: One chunk id names two different texts, an example id appears twice, or
            an example names a chunk not read with it.
    """
    chunks: list[Chunk] = []
    id_map: dict[str, str] = {}
    key_of_id: dict[str, str] = {}  # original id -> its text key, to catch one id used for two texts
    origin_of_id: dict[str, str] = {}
    id_of_key: dict[str, str] = {}
    for res in results:
        for chunk in res.chunks:
            key = dedup_key(chunk.contents)
            if chunk.id in key_of_id:
                if key_of_id[chunk.id] != key:
                    raise DataFormatError(
                        res.path,
                        f"chunk id {chunk.id!r} names two different texts (the other is in "
                        f"{origin_of_id[chunk.id]})",
                        record=chunk.id,
                        field="id",
                    )
                continue
            key_of_id[chunk.id] = key
            origin_of_id[chunk.id] = res.path
            if key not in id_of_key:
                id_of_key[key] = chunk.id
                chunks.append(chunk)
            id_map[chunk.id] = id_of_key[key]

    examples: list[Example] = []
    example_origin: dict[str, str] = {}
    for res in results:
        for ex in res.examples:
            if ex.id in example_origin:
                raise DataFormatError(
                    res.path,
                    f"example id {ex.id!r} also appears in {example_origin[ex.id]}; pool files "
                    "that hold the same questions separately",
                    record=ex.id,
                    field="id",
                )
            example_origin[ex.id] = res.path
            examples.append(
                dataclasses.replace(
                    ex,
                    gold_chunk_ids=_remap(res, ex, "gold_chunk_ids", id_map),
                    context_ids=_remap(res, ex, "context_ids", id_map),
                )
            )
    skipped = [s for res in results for s in res.skipped]
    return PooledDataset(
        corpus=Corpus(chunks),
        examples=examples,
        id_map=id_map,
        skipped=skipped,
        stats=pool_stats(results, id_map, len(chunks)),
    )


def _remap(res: ReadResult, ex: Example, attr: str, id_map: dict[str, str]) -> list[str]:
    out: list[str] = []
    for cid in getattr(ex, attr):
        if cid not in id_map:
            raise DataFormatError(
                res.path, f"chunk id {cid!r} is not among the chunks read with it", record=ex.id, field=attr
            )
        if id_map[cid] not in out:
            out.append(id_map[cid])
    return out


def pool_stats(results: Sequence[ReadResult], id_map: dict[str, str], chunks_after: int) -> dict[str, Any]:
    """Sizes before and after de-duplication, overall, per dataset and per source file."""
    per_dataset: dict[str, dict[str, Any]] = {}
    sources = []
    for res in results:
        entry = _source_stats(res, id_map)
        sources.append({"dataset": res.dataset, "path": res.path, **entry})
        agg = per_dataset.setdefault(res.dataset, {"examples": 0, "skipped": 0, "chunks": 0, "_ids": set()})
        agg["examples"] += entry["examples"]
        agg["skipped"] += entry["skipped"]
        agg["chunks"] += entry["chunks"]
        agg["_ids"].update(id_map[c.id] for c in res.chunks)
    for agg in per_dataset.values():
        agg["unique_chunks"] = len(agg.pop("_ids"))
    chunks_before = sum(len(r.chunks) for r in results)
    return {
        "chunks_before": chunks_before,
        "chunks_after": chunks_after,
        "duplicates_merged": chunks_before - chunks_after,
        "examples": sum(len(r.examples) for r in results),
        "skipped": sum(len(r.skipped) for r in results),
        "per_dataset": per_dataset,
        "sources": sources,
    }


def _source_stats(res: ReadResult, id_map: dict[str, str]) -> dict[str, int]:
    return {
        "examples": len(res.examples),
        "skipped": len(res.skipped),
        "chunks": len(res.chunks),
        "unique_chunks": len({id_map[c.id] for c in res.chunks}),
    }
