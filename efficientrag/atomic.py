"""Whole-file and whole-folder writes that a crash cannot leave half done: write a temp file (or
folder) beside the target, fsync it, rename it over the target, then fsync the parent folder so the
rename itself survives a power loss. Every file a later run trusts (configs, fingerprints, indexes'
metadata, stage manifests, summaries, model folders, checkpoints) goes through here.

Append-only logs are the other storage shape: :class:`efficientrag.jsonl.JsonlAppender`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from efficientrag.errors import InvalidArgumentError


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temp path beside ``path`` for writers that want a file name rather than a handle (FAISS,
    ``np.save``); once the body returns, the file is fsynced and renamed over ``path``. On an error
    the temp file is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # The pid keeps two processes writing the same target from sharing one temp file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temp file for writing; on a clean exit it replaces ``path`` (on an error it is removed)."""
    if mode not in ("w", "wb"):
        raise InvalidArgumentError(f"atomic_open writes whole files: mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(path) as tmp, tmp.open(mode, **({"encoding": "utf-8"} if mode == "w" else {})) as fh:
        yield fh


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_open(path) as fh:
        fh.write(text)


def write_json_atomic(
    path: str | Path, obj: Any, *, indent: int | None = 1, ensure_ascii: bool = False, **dump: Any
) -> None:
    """``json.dump`` into ``path`` atomically; ``dump`` passes on (``default=str``, ``sort_keys``)."""
    with atomic_open(path) as fh:
        json.dump(obj, fh, ensure_ascii=ensure_ascii, indent=indent, **dump)


def staging_folder(folder: str | Path, *, clear: bool = True) -> Path:
    """``<folder>.tmp``: where a new version of ``folder`` is written before :func:`replace_folder`
    swaps it in. ``clear`` empties what a killed writer left there; in a distributed checkpoint
    only the main process clears it, the others only need its name."""
    folder = Path(folder)
    staged = folder.with_name(folder.name + ".tmp")
    if clear:
        shutil.rmtree(staged, ignore_errors=True)
        staged.parent.mkdir(parents=True, exist_ok=True)
    return staged


def replace_folder(staged: str | Path, folder: str | Path) -> Path:
    """Make the complete folder ``staged`` become ``folder``.

    Its files are fsynced first; the old ``folder`` is renamed to ``<folder>.old`` before the new
    one takes its name and deleted after, so a crash between the two renames leaves a complete
    ``.old`` for a reader to fall back on (:func:`efficientrag.training.checkpoint.last_checkpoint`).
    """
    staged, folder = Path(staged), Path(folder)
    for root, _dirs, files in os.walk(staged):
        for name in files:
            _fsync_file(Path(root) / name)
        _fsync_dir(Path(root))
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    staged.rename(folder)
    _fsync_dir(folder.parent)
    shutil.rmtree(old, ignore_errors=True)
    return folder


@contextlib.contextmanager
def atomic_folder(folder: str | Path) -> Iterator[Path]:
    """Write a new version of ``folder`` into the yielded temp folder; a clean exit swaps it in
    (:func:`replace_folder`), an error removes it and leaves ``folder`` as it was."""
    staged = staging_folder(folder)
    staged.mkdir()
    try:
        yield staged
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    replace_folder(staged, folder)


def _fsync_file(path: Path) -> None:
    # Opened for reading: fsync flushes the file's data whatever descriptor it is called on
    # (POSIX; Windows needs a writable handle, and gets one here).
    with open(path, "rb" if os.name != "nt" else "rb+") as fh:
        os.fsync(fh.fileno())


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
