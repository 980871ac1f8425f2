"""Content hashes: what an index, a training cache or an evaluation run was made from.

Hashes are taken over content, not names or times, so a copied folder still matches and an edited
one never does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHUNK = 1 << 20
# Files of a model folder that do not change what the model computes.
NOT_MODEL_CONTENT = frozenset({"README.md", "metrics.json", "train_config.yaml", ".gitattributes"})


def file_digest(paths: Iterable[str | Path]) -> str:
    """sha256 over the contents of ``paths`` (in the given order)."""
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as fh:
            while block := fh.read(CHUNK):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def json_digest(obj: Any, length: int = 16) -> str:
    """A stable hash of JSON-able data (keys sorted), ``length`` hex digits long."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:length]


def folder_digest(folder: str | Path, length: int = 16) -> str:
    """A model folder's content: every top-level file that decides its outputs (config, weights,
    tokenizer), by name and bytes. The model card and training logs are left out."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name not in NOT_MODEL_CONTENT)
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode("utf-8") + b"\0")
        h.update(file_digest([path]).encode("ascii"))
    return h.hexdigest()[:length]
