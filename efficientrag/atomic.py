"""Whole-file writes that a crash cannot leave half done: write a temp file beside the target,
fsync it, rename it over the target, then fsync the folder so the rename itself survives a power
loss. Every file a later run trusts (configs, fingerprints, indexes' metadata, summaries) goes
through here."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temp file for writing; on a clean exit it replaces ``path`` (on an error it is removed)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open(mode, **({"encoding": "utf-8"} if mode == "w" else {})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_open(path) as fh:
        fh.write(text)


def write_json_atomic(path: str | Path, obj: Any, *, indent: int | None = 1) -> None:
    with atomic_open(path) as fh:
        json.dump(obj, fh, ensure_ascii=False, indent=indent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # a platform without directory handles (Windows): the rename is what we have
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
