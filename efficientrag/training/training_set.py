"""A synthesized training set as a ``datasets.DatasetDict``: from its JSONL files or a ``save_to_disk`` folder.

``efficientrag.synth`` writes ``labeler/`` and ``filter/`` folders holding ``train.jsonl`` and
``validation.jsonl``; this module loads such a folder with ``load_dataset("json", ...)`` (Arrow,
memory-mapped, converted once and cached by ``datasets``) or, when the folder was written by
``DatasetDict.save_to_disk``, with ``load_from_disk``. So a set can be inspected, filtered, mixed
and re-saved with the whole ``datasets`` toolbox, and training reads whatever comes back.
"""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset, DatasetDict, load_dataset
from datasets.exceptions import DatasetGenerationError

from efficientrag.data.readers.hub import is_saved_dataset
from efficientrag.data.readers.hub import load_saved_split as load_saved_dataset_split
from efficientrag.errors import DataFormatError, not_a_file
from efficientrag.training.data import SPLIT_FILES, numbered_records

# What a JSON load of a broken file raises, depending on where pyarrow and ``datasets`` give up.
JSON_LOAD_ERRORS = (DatasetGenerationError, ValueError, TypeError)


def load_training_set(
    folder: str | Path, *, splits: tuple[str, ...] = tuple(SPLIT_FILES), cache_dir: str | Path | None = None
) -> DatasetDict:
    """The ``train`` and ``validation`` splits of a Labeler or Filter training set folder.

    A JSONL file that ``datasets`` cannot parse fails with the file and the first bad line; training
    itself is more lenient (it skips and records bad lines, see ``efficientrag.training.encoded``).

    Args:
        folder: ``train.jsonl`` and ``validation.jsonl``, or a ``save_to_disk`` folder.
        splits: The splits to load.
        cache_dir: Where ``datasets`` caches the parsed JSONL (None: its default).

    Returns:
        The splits.

    Raises:
        DataFormatError: The folder or a file is missing, or a file cannot be parsed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataFormatError(folder, "training set folder not found")
    if is_saved_dataset(folder):
        return DatasetDict({split: load_saved_split(folder, split) for split in splits})
    return DatasetDict(
        {split: load_jsonl_split(folder / SPLIT_FILES[split], cache_dir=cache_dir) for split in splits}
    )


def load_saved_split(folder: Path, split: str) -> Dataset:
    """One split of a ``save_to_disk`` folder (a saved ``Dataset`` counts as the ``train`` split)."""
    return load_saved_dataset_split(folder, split, single="train")


def load_jsonl_split(path: Path, *, cache_dir: str | Path | None = None) -> Dataset:
    if not path.is_file():
        raise not_a_file(path)
    try:
        return try_load_jsonl(path, cache_dir=cache_dir)
    except JSON_LOAD_ERRORS as exc:
        raise first_unreadable_line(path) or DataFormatError(
            path, f"datasets could not load it ({exc})"
        ) from exc


def try_load_jsonl(path: Path, *, cache_dir: str | Path | None = None) -> Dataset:
    """``load_dataset("json")`` of one file as its ``train`` split; raises what ``datasets`` raises."""
    loaded = load_dataset(
        "json",
        data_files={"train": str(path)},
        split="train",
        cache_dir=str(cache_dir) if cache_dir else None,
    )
    assert isinstance(loaded, Dataset)
    return loaded


def first_unreadable_line(path: Path) -> DataFormatError | None:
    for lineno, _, parse_error in numbered_records(path):
        if parse_error is not None:
            return DataFormatError(path, parse_error, line=lineno)
    return None
