"""The metadata saved next to every index (``meta.json`` + ``ids.json``) and the checks made on load.

``meta.json`` is written last, so its presence means the index files beside it are complete.
Everything is JSON: nothing a user downloads from elsewhere is ever unpickled.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from efficientrag import __version__
from efficientrag.atomic import write_json_atomic
from efficientrag.data.corpus import Corpus
from efficientrag.retrieval.errors import IndexMismatchError, IndexNotFoundError

META_FILE = "meta.json"
IDS_FILE = "ids.json"
FORMAT = "efficientrag-index"
FORMAT_VERSION = 1


def new_meta(kind: str, corpus: Corpus) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "corpus_size": len(corpus),
        "corpus_fingerprint": corpus.fingerprint(),
        "ids_file": IDS_FILE,
        "efficientrag_version": __version__,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise IndexNotFoundError(path.parent, f"{path.name} is not valid JSON ({exc})") from exc


def save_meta(index_dir: Path, meta: dict[str, Any], ids: Sequence[str]) -> None:
    write_json_atomic(index_dir / IDS_FILE, list(ids))
    write_json_atomic(index_dir / META_FILE, meta)


def load_meta(index_dir: str | Path, kind: str) -> dict[str, Any]:
    index_dir = Path(index_dir)
    path = index_dir / META_FILE
    if not path.is_file():
        detail = f"{META_FILE} is missing"
        if (index_dir / "embeddings").is_dir():
            detail += " (embeddings/ holds an interrupted build: building again resumes it)"
        raise IndexNotFoundError(index_dir, detail)
    meta = read_json(path)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise IndexNotFoundError(index_dir, f"{META_FILE} is not an efficientrag index description")
    if meta.get("format_version") != FORMAT_VERSION:
        raise IndexMismatchError(path, "format_version", meta.get("format_version"), FORMAT_VERSION)
    check_field(path, meta, "kind", kind)
    return meta


def check_field(where: str | Path, meta: dict[str, Any], field: str, requested: Any) -> None:
    if meta.get(field) != requested:
        raise IndexMismatchError(where, field, meta.get(field), requested)


def check_corpus(index_dir: Path, meta: dict[str, Any], corpus: Corpus) -> None:
    """Same chunks, same order, same text: a fingerprint mismatch means the rows point elsewhere."""
    where = index_dir / META_FILE
    check_field(where, meta, "corpus_size", len(corpus))
    check_field(where, meta, "corpus_fingerprint", corpus.fingerprint())
    if not (index_dir / IDS_FILE).is_file():
        raise IndexNotFoundError(index_dir, f"{IDS_FILE} is missing")
    if read_json(index_dir / IDS_FILE) != corpus.ids:
        raise IndexMismatchError(index_dir / IDS_FILE, "chunk id order", "(saved order)", "(corpus order)")
