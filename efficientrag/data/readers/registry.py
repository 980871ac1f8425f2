"""Dataset names (as written in configs and on the command line) to reader functions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from efficientrag.data.readers.hotpotqa import read_hotpotqa
from efficientrag.data.readers.hub import PARSERS, is_datasets_source, read_datasets_source
from efficientrag.data.readers.jsonl_dataset import read_jsonl_dataset
from efficientrag.data.readers.musique import read_musique
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.toy import read_toy_world
from efficientrag.data.readers.twowiki import read_2wiki
from efficientrag.errors import InvalidArgumentError

READERS: dict[str, Callable[..., ReadResult]] = {
    "hotpotqa": read_hotpotqa,
    "2wikimultihopqa": read_2wiki,
    "musique": read_musique,
    "jsonl": read_jsonl_dataset,
    "toy": read_toy_world,
}
ALIASES = {"hotpot": "hotpotqa", "2wiki": "2wikimultihopqa", "2wikimqa": "2wikimultihopqa"}


def canonical_dataset_name(name: str) -> str:
    """The reader's name for a dataset name as users write it, so aliases key one table.

    Args:
        name: A dataset name or alias, any case (``"2wiki"``, ``"HotpotQA"``).

    Returns:
        One of ``hotpotqa``, ``2wikimultihopqa``, ``musique``, ``jsonl``, ``toy``.

    Raises:
        ValueError: The name is unknown (the message lists the known ones).
    """
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in READERS:
        known = sorted([*READERS, *ALIASES])
        raise InvalidArgumentError(f"unknown dataset {name!r}; known names: {', '.join(known)}")
    return key


def read_dataset(name: str, path: str | Path | None = None, **kwargs: Any) -> ReadResult:
    """``read_dataset("2wiki", "dev.json", strict=False)``; ``jsonl`` also needs ``corpus_path=``,
    ``toy`` takes the generator's arguments (``seed=``, ``num_questions=``) and an optional path.

    HotpotQA, 2Wiki and MuSiQue also read ``"hub"``, ``"hub:owner/name[:config]"`` or a
    ``save_to_disk`` folder (``split=`` picks the split, default ``"validation"``).

    Args:
        name: The dataset name or alias (see :func:`canonical_dataset_name`).
        path: The data file, a Hub or ``save_to_disk`` source, or for ``toy`` where to write the world.
        **kwargs: The reader's own keywords (``strict``, ``limit``, ``corpus_path``, ``format``,
            ``split``, the toy generator's arguments).

    Returns:
        The file's examples and chunks, before pooling.

    Raises:
        ValueError: The name is unknown, or a dataset other than ``toy`` has no ``path``.
        DataFormatError: The data cannot be read.
    """
    key = canonical_dataset_name(name)
    if key in PARSERS and is_datasets_source(path):
        assert path is not None
        return read_datasets_source(key, path, **kwargs)
    if key == "toy":
        return read_toy_world(path, **kwargs)
    if path is None:
        raise InvalidArgumentError(f"dataset {key!r} needs the path of its data file")
    return READERS[key](path, **kwargs)
