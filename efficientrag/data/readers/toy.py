"""The toy world as a dataset: generated, written as MuSiQue JSONL, and read back by the MuSiQue reader.

Writing it out first (instead of handing records over in memory) keeps the toy world on exactly
the path real data takes, JSON round trip included.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from efficientrag.data.readers.musique import read_musique
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.toy_world import write_toy_world

DATASET = "toy"


def read_toy_world(
    path: str | Path | None = None,
    *,
    strict: bool = True,
    limit: int | None = None,
    **generate_kw: Any,
) -> ReadResult:
    """Generate the world (``generate_kw`` go to :func:`generate_toy_world`) and read it.

    ``path`` is where the generated JSONL is written (it is overwritten: the same arguments
    always give the same file); without one it goes to a temporary folder and the result's
    ``path`` describes the generation instead.

    Args:
        path: Where to write the generated MuSiQue-format JSONL (None: a temporary folder).
        strict: True (the default) fails on bad records with one :class:`DataFormatError` naming
            each (the first 20, then a count); False skips them, listing each in ``skipped``.
        limit: Stop after this many examples (None: read them all).
        **generate_kw: ``seed``, ``num_questions``, ``paragraphs_per_question``, ``type_mix``.

    Returns:
        The toy examples (dataset ``"toy"``) and their paragraphs, before pooling.
    """
    if path is not None:
        write_toy_world(path, **generate_kw)
        return read_musique(path, strict=strict, limit=limit, dataset=DATASET)
    with tempfile.TemporaryDirectory(prefix="efficientrag-toy-") as tmp:
        tmp_path = Path(tmp) / "toy_world.jsonl"
        write_toy_world(tmp_path, **generate_kw)
        result = read_musique(tmp_path, strict=strict, limit=limit, dataset=DATASET)
    label = " ".join(f"{k}={generate_kw[k]}" for k in ("seed", "num_questions") if k in generate_kw)
    return dataclasses.replace(result, path=f"<toy world {label}>" if label else "<toy world>")
