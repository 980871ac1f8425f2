"""HotpotQA, 2WikiMultihopQA and MuSiQue from the Hugging Face Hub or a ``save_to_disk`` folder.

``path="hub"`` names the dataset's default Hub copy, ``path="hub:owner/name"`` (or
``"hub:owner/name:config"``) another one; a folder written by ``save_to_disk`` is read with
``load_from_disk``. Each Hub row is mapped back onto the original record layout and parsed by the
same function that parses the original files, so a Hub copy yields the same :class:`Example`
records, chunk ids and gold order as the file. Hub copies differ in small ways (``id`` for
``_id``, column-wise ``context`` with ``content`` for ``sentences``, column-wise ``evidences``);
the mapping undoes those. With ``HF_HUB_OFFLINE=1`` / ``HF_DATASETS_OFFLINE=1``, or when the Hub
cannot be reached, the error says to pass the downloaded file's path instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from efficientrag.data.readers.collect import ParseFn, collect
from efficientrag.data.readers.hotpotqa import parse_distractor
from efficientrag.data.readers.musique import parse_musique
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.source import SourceRecord
from efficientrag.data.readers.twowiki import parse_2wiki
from efficientrag.errors import DataFormatError, EfficientRAGError, InvalidArgumentError

HUB_PREFIX = "hub"
# Default Hub copies (repository, config). HotpotQA's is the official one; for 2Wiki and MuSiQue
# these are mirrors of the original files (the authors publish them outside the Hub).
HUB_DEFAULTS: dict[str, tuple[str, str | None]] = {
    "hotpotqa": ("hotpotqa/hotpot_qa", "distractor"),
    "2wikimultihopqa": ("ohjoonhee/2WikiMultihopQA", None),
    "musique": ("dgslibisey/MuSiQue", None),
}
ORIGINAL_FILES = {
    "hotpotqa": "hotpot_dev_distractor_v1.json",
    "2wikimultihopqa": "dev.json",
    "musique": "musique_ans_v1.0_dev.jsonl",
}
SAVED_MARKERS = ("dataset_dict.json", "state.json")
_OFF = {"1", "true", "yes", "on"}


class HubUnavailableError(EfficientRAGError, RuntimeError):
    """The Hub is switched off or unreachable; the message says which file path to pass instead."""


def is_hub_path(path: str | Path | None) -> bool:
    text = str(path) if path is not None else ""
    return text == HUB_PREFIX or text.startswith(HUB_PREFIX + ":")


def is_saved_dataset(path: str | Path | None) -> bool:
    """True for a folder written by ``Dataset.save_to_disk`` or ``DatasetDict.save_to_disk``."""
    return path is not None and any((Path(path) / marker).is_file() for marker in SAVED_MARKERS)


def is_datasets_source(path: str | Path | None) -> bool:
    return is_hub_path(path) or is_saved_dataset(path)


def hub_is_off() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in _OFF for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def hub_repo(dataset: str, path: str | Path) -> tuple[str, str | None]:
    """``(repository, config)`` named by ``hub`` / ``hub:owner/name`` / ``hub:owner/name:config``."""
    text = str(path)
    if text == HUB_PREFIX:
        return HUB_DEFAULTS[dataset]
    repo, _, config = text[len(HUB_PREFIX) + 1 :].partition(":")
    if not repo:
        raise InvalidArgumentError(f"empty Hub dataset name in {text!r}; write hub:owner/name or just hub")
    return repo, (config or None)


def read_datasets_source(
    dataset: str,
    path: str | Path,
    *,
    split: str = "validation",
    strict: bool = True,
    limit: int | None = None,
) -> ReadResult:
    """Examples and chunks of a Hub copy or a ``save_to_disk`` folder of ``dataset``.

    Rows are turned back into the original file's records, so they are parsed by the same code.

    Args:
        dataset: ``hotpotqa``, ``2wikimultihopqa`` or ``musique`` (canonical names).
        path: ``"hub"`` (the default Hub copy), ``"hub:owner/name[:config]"``, or a folder written
            by ``save_to_disk``.
        split: The split to read.
        strict: True (the default) fails on bad records with one :class:`DataFormatError` naming
            each (the first 20, then a count); False skips them, listing each in ``skipped``.
        limit: Stop after this many examples (None: read them all).

    Returns:
        The examples and chunks, with the source and split as the result's ``path``.

    Raises:
        ValueError: The dataset has no Hub reader.
        HubUnavailableError: The Hub is switched off (``HF_HUB_OFFLINE``) or unreachable.
        DataFormatError: The saved folder lacks the split, or (``strict``) records are bad.
    """
    if dataset not in PARSERS:
        raise InvalidArgumentError(
            f"dataset {dataset!r} has no Hub reader; known: {', '.join(sorted(PARSERS))}"
        )
    if is_saved_dataset(path):
        rows, label = load_saved_split(Path(path), split), f"{path}[{split}]"
    else:
        repo, config = hub_repo(dataset, path)
        rows, label = load_hub_split(dataset, repo, config, split), f"hub:{repo}[{split}]"
    to_original, parse = PARSERS[dataset]
    return collect(dataset, label, hub_records(rows, to_original), parse, strict=strict, limit=limit)


def load_saved_split(folder: Path, split: str, *, single: str | None = None) -> Any:
    """One split of a ``save_to_disk`` folder. A folder holding one ``Dataset`` rather than a
    ``DatasetDict`` serves as any split, or, with ``single``, only as the split of that name."""
    from datasets import DatasetDict, load_from_disk

    saved = load_from_disk(str(folder))
    if isinstance(saved, DatasetDict):
        if split not in saved:
            raise DataFormatError(folder, f"saved dataset has no {split!r} split (it has {sorted(saved)})")
        return saved[split]
    if single is not None and split != single:
        raise DataFormatError(folder, f"saved dataset is a single Dataset; it has no {split!r} split")
    return saved


def load_hub_split(dataset: str, repo: str, config: str | None, split: str) -> Any:
    """One split from the Hub; refused up front when offline, so nothing touches the network."""
    hint = (
        f"pass the path of the downloaded file instead (e.g. path=/data/{ORIGINAL_FILES[dataset]}) "
        "or a folder written by datasets' save_to_disk"
    )
    if hub_is_off():
        raise HubUnavailableError(
            f"{dataset}: loading hub:{repo} needs the Hugging Face Hub, but HF_HUB_OFFLINE/HF_DATASETS_OFFLINE "
            f"is set; {hint}"
        )
    from datasets import load_dataset

    try:
        return load_dataset(repo, config, split=split)
    except (ConnectionError, TimeoutError, OSError) as exc:
        raise HubUnavailableError(f"{dataset}: could not load hub:{repo} ({exc}); {hint}") from exc


def hub_records(rows: Any, to_original: Callable[[dict[str, Any]], dict[str, Any]]) -> Iterator[SourceRecord]:
    for index, row in enumerate(rows):
        yield SourceRecord(index=index, line=None, obj=to_original(dict(row)))


def hotpotqa_original(row: dict[str, Any]) -> dict[str, Any]:
    """The Hub's HotpotQA has ``id`` for ``_id``; column-wise context is parsed as it is."""
    if "_id" not in row and "id" in row:
        row["_id"] = row.pop("id")
    return row


def twowiki_original(row: dict[str, Any]) -> dict[str, Any]:
    row = hotpotqa_original(row)
    context = row.get("context")
    if isinstance(context, dict) and "sentences" not in context and "content" in context:
        row["context"] = {"title": context.get("title"), "sentences": context["content"]}
    evidences = row.get("evidences")
    if isinstance(evidences, dict):
        columns = [evidences.get(k) or [] for k in ("fact", "relation", "entity")]
        row["evidences"] = [list(triple) for triple in zip(*columns, strict=False)]
    return row


def musique_original(row: dict[str, Any]) -> dict[str, Any]:
    return row


PARSERS: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], ParseFn]] = {
    "hotpotqa": (hotpotqa_original, parse_distractor),
    "2wikimultihopqa": (twowiki_original, parse_2wiki),
    "musique": (musique_original, parse_musique),
}
