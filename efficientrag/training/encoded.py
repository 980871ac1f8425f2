"""Training rows checked and tokenized through ``Dataset.map``, cached on disk, served to the loader.

``prepare_split`` turns one split of a training set into an :class:`EncodedDataset`:

1. load the rows with ``datasets`` (:mod:`efficientrag.training.training_set`); a JSONL file that
   pyarrow cannot parse (a torn last line, a row of the wrong shape) is read line by line instead
   (:func:`efficientrag.training.data.read_rows`), so one bad line never blocks a run;
2. check every row (``map`` writing only an error column), skip and record the bad ones with file,
   line and reason, and fail on more than ``max_bad_row_fraction`` of them;
3. tokenize the good rows with the model's own ``encode_rows`` in a batched ``map``.

Steps 2 and 3 write Arrow cache files named by fingerprints of their real inputs
(:mod:`efficientrag.training.fingerprint`), so a second run of the same config loads the tokenized
rows instead of tokenizing again, and a changed tokenizer, ``max_length``, row limit or data file
tokenizes anew. The rows stay memory-mapped: a batch is read from Arrow when the loader asks for it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from datasets import Dataset, Features, List, Value
from torch.utils.data import Dataset as TorchDataset

from efficientrag.data.errors import SkippedRecord
from efficientrag.data.readers.hub import is_saved_dataset
from efficientrag.errors import DataFormatError, InvalidArgumentError, not_a_file
from efficientrag.fingerprint import file_digest
from efficientrag.models.inputs import ROW_TYPES
from efficientrag.models.tokenization import EncodedInput
from efficientrag.training.data import (
    SPLIT_FILES,
    check_bad_fraction,
    nonblank_line_numbers,
    parse_row,
    read_rows,
    row_error,
)
from efficientrag.training.fingerprint import code_digest, fingerprint, tokenizer_digest
from efficientrag.training.training_set import JSON_LOAD_ERRORS, load_saved_split, try_load_jsonl

logger = logging.getLogger(__name__)

ENCODE_BATCH = 1000
ENCODED_FEATURES = Features(
    {
        "id": Value("string"),
        "input_ids": List(Value("int32")),
        "word_ids": List(Value("int32")),
        "token_type_ids": List(Value("int8")),  # empty: the tokenizer has none
        "segment_ids": List(Value("int8")),  # empty: not recorded
        "n_words": Value("int32"),
        "truncated_words": Value("int32"),
        "query_truncated_words": Value("int32"),
        "word_labels": List(Value("int8")),
        "tag": Value("int8"),  # -1: no tag (Filter rows)
        "length": Value("int32"),
    }
)
# What the line-by-line fallback keeps of a row (``meta`` is free-form and not used in training).
ROW_FEATURES = {
    "labeler": Features(
        {
            "id": Value("string"),
            "question_id": Value("string"),
            "query_words": List(Value("string")),
            "chunk_words": List(Value("string")),
            "labels": List(Value("int8")),
            "tag": Value("string"),
        }
    ),
    "filter": Features(
        {
            "id": Value("string"),
            "question_id": Value("string"),
            "words": List(Value("string")),
            "labels": List(Value("int8")),
        }
    ),
}


class EncodedDataset(TorchDataset):
    """Items are ``(index, EncodedInput)`` so the collator can carry row indices along.

    Backed by the Arrow table of the tokenized rows; ``__getitems__`` reads a whole batch at once.
    """

    def __init__(self, table: Dataset) -> None:
        self.table = table
        self.lengths = self.column("length")
        self.ids: list[str] = table.with_format("arrow")["id"].to_pylist()

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, index: int) -> tuple[int, EncodedInput]:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[int, EncodedInput]]:
        batch = self.table[list(indices)]
        return [(int(i), _to_input(batch, j)) for j, i in enumerate(indices)]

    def column(self, name: str) -> np.ndarray:
        """A scalar column as int64, read column-wise from Arrow (row-wise access is slow)."""
        return self.table.with_format("arrow")[name].to_numpy().astype(np.int64)

    def truncation_stats(self) -> dict[str, float]:
        cut = self.column("truncated_words")
        cut_query = self.column("query_truncated_words")
        words = self.column("n_words")
        return {
            "rows": len(self),
            "truncated_rows": int(((cut > 0) | (cut_query > 0)).sum()),
            "truncated_word_fraction": float(cut.sum()) / (int(words.sum()) or 1),
            "mean_length": float(self.lengths.mean()) if len(self.lengths) else 0.0,
        }

    def label_counts(self) -> np.ndarray:
        """``[negatives, positives]`` over every target word."""
        counts = np.zeros(2, dtype=np.float64)
        for part in self.table.with_format("arrow").iter(batch_size=8192):
            flat = part["word_labels"].combine_chunks().flatten().to_numpy()
            counts += np.bincount(flat.astype(np.int64), minlength=2)[:2]
        return counts


def positive_class_weights(sets: Sequence[EncodedDataset]) -> list[float]:
    """``N / (2 * count)`` per class over target words, as the official ``token_weight_avg.py``."""
    counts = sum((ds.label_counts() for ds in sets), np.zeros(2, dtype=np.float64))
    if (counts == 0).any():
        raise InvalidArgumentError(
            f"class_weights='auto' needs both classes in the training labels, counts {counts}"
        )
    return (counts.sum() / (2.0 * counts)).tolist()


@dataclass
class PreparedSplit:
    path: Path
    dataset: EncodedDataset
    skipped: list[SkippedRecord] = field(default_factory=list)
    cache_file: str = ""
    from_cache: bool = False


def prepare_split(
    folder: str | Path,
    split: str,
    kind: str,
    model: Any,
    *,
    max_length: int,
    limit: int = 0,
    max_bad_fraction: float = 0.01,
    cache_dir: str | Path | None = None,
) -> PreparedSplit:
    """Check and tokenize one split of a training set folder (JSONL files or ``save_to_disk``).

    ``model`` is a Labeler or Filter (its ``tokenizer`` and ``encode_rows`` are used); ``limit``
    keeps the first ``limit`` good rows (0 = all), as :func:`read_rows` does.
    """
    if kind not in ROW_TYPES:
        raise InvalidArgumentError(f"kind must be one of {sorted(ROW_TYPES)}, got {kind!r}")
    folder = Path(folder)
    cache_root = Path(cache_dir) if cache_dir else Path(datasets.config.HF_DATASETS_CACHE) / "efficientrag"
    cache_root.mkdir(parents=True, exist_ok=True)
    rows, path, data_key, skipped = _good_rows(folder, split, kind, limit, max_bad_fraction, cache_root)
    key = fingerprint(
        step="encode",
        data=data_key,
        kind=kind,
        limit=limit,
        max_length=max_length,
        tokenizer=tokenizer_digest(model.tokenizer),
        code=code_digest(),
    )
    cache_file = cache_root / f"{kind}-{split}-encoded-{key}.arrow"
    from_cache = cache_file.is_file()
    encoded = rows.map(
        _RowEncoder(model, kind, max_length),
        batched=True,
        batch_size=ENCODE_BATCH,
        remove_columns=rows.column_names,
        features=ENCODED_FEATURES,
        new_fingerprint=key,
        cache_file_name=str(cache_file),
        load_from_cache_file=True,
        desc=f"encode {kind} {split}",
    )
    if from_cache:
        logger.info("%s %s: tokenized rows loaded from cache %s", kind, split, cache_file)
    return PreparedSplit(path, EncodedDataset(encoded), skipped, str(cache_file), from_cache)


class _RowEncoder:
    """The ``map`` function: a batch of rows in, their encoded columns out.

    A callable object rather than a closure so nothing tempts ``datasets`` into pickling the model:
    the fingerprint is always passed in (``new_fingerprint``).
    """

    def __init__(self, model: Any, kind: str, max_length: int) -> None:
        self.model = model
        self.kind = kind
        self.max_length = max_length

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        n = len(batch["id"])
        rows = [parse_row({k: v[i] for k, v in batch.items()}, self.kind) for i in range(n)]
        encoded = self.model.encode_rows(rows, max_length=self.max_length)
        return _to_columns([r.id for r in rows], encoded)


def _to_columns(ids: list[str], encoded: Sequence[EncodedInput]) -> dict[str, list[Any]]:
    def listed(a: np.ndarray | None) -> list[int]:
        return [] if a is None else a.tolist()

    return {
        "id": ids,
        "input_ids": [e.input_ids.tolist() for e in encoded],
        "word_ids": [e.word_ids.tolist() for e in encoded],
        "token_type_ids": [listed(e.token_type_ids) for e in encoded],
        "segment_ids": [listed(e.segment_ids) for e in encoded],
        "n_words": [e.n_words for e in encoded],
        "truncated_words": [e.truncated_words for e in encoded],
        "query_truncated_words": [e.query_truncated_words for e in encoded],
        "word_labels": [listed(e.word_labels) for e in encoded],
        "tag": [e.tag for e in encoded],
        "length": [len(e) for e in encoded],
    }


def _to_input(batch: dict[str, list[Any]], j: int) -> EncodedInput:
    type_ids = batch["token_type_ids"][j]
    segments = batch["segment_ids"][j]
    return EncodedInput(
        input_ids=np.asarray(batch["input_ids"][j], dtype=np.int32),
        word_ids=np.asarray(batch["word_ids"][j], dtype=np.int32),
        token_type_ids=np.asarray(type_ids, dtype=np.int32) if type_ids else None,
        n_words=int(batch["n_words"][j]),
        truncated_words=int(batch["truncated_words"][j]),
        query_truncated_words=int(batch["query_truncated_words"][j]),
        word_labels=np.asarray(batch["word_labels"][j], dtype=np.int64),
        tag=int(batch["tag"][j]),
        segment_ids=np.asarray(segments, dtype=np.int8) if segments else None,
    )


def _good_rows(
    folder: Path, split: str, kind: str, limit: int, max_bad_fraction: float, cache_root: Path
) -> tuple[Dataset, Path, str, list[SkippedRecord]]:
    """The split's valid rows (first ``limit``), its source, a key of its content, and the skipped rows."""
    if is_saved_dataset(folder):
        raw = load_saved_split(folder, split)
        key = file_digest(f["filename"] for f in raw.cache_files)
        check = _Check(Path(f"{folder}[{split}]"), split, kind, key, jsonl=None)
        rows, skipped = check.run(raw, limit, max_bad_fraction, cache_root)
        return rows, folder, key, skipped
    path = folder / SPLIT_FILES[split]
    if not path.is_file():
        raise not_a_file(path)
    key = file_digest([path])
    try:
        raw = try_load_jsonl(path, cache_dir=cache_root / "json")
    except JSON_LOAD_ERRORS as exc:
        logger.warning("%s: datasets could not parse it (%s); reading it line by line", path, exc)
        loaded = read_rows(path, kind, limit=limit, max_bad_fraction=max_bad_fraction)
        records = [{name: getattr(r, name) for name in ROW_FEATURES[kind]} for r in loaded.rows]
        return Dataset.from_list(records, features=ROW_FEATURES[kind]), path, key, loaded.skipped
    rows, skipped = _Check(path, split, kind, key, jsonl=path).run(raw, limit, max_bad_fraction, cache_root)
    return rows, path, key, skipped


CHECK_FEATURES = Features({"error": Value("string"), "field": Value("string"), "record": Value("string")})


@dataclass
class _Check:
    """Row checking as a cached ``map`` that writes only the verdict columns (tiny next to the rows)."""

    source: Path
    split: str
    kind: str
    data_key: str
    jsonl: Path | None  # the JSONL file the rows came from: row i is its i-th non-blank line

    def run(
        self, raw: Dataset, limit: int, max_bad_fraction: float, cache_root: Path
    ) -> tuple[Dataset, list[SkippedRecord]]:
        key = fingerprint(step="check", data=self.data_key, kind=self.kind, code=code_digest())
        verdicts = raw.map(
            self,
            batched=True,
            batch_size=ENCODE_BATCH,
            remove_columns=raw.column_names,
            features=CHECK_FEATURES,
            new_fingerprint=key,
            cache_file_name=str(cache_root / f"{self.kind}-{self.split}-check-{key}.arrow"),
            load_from_cache_file=True,
            desc=f"check {self.kind} {self.split}",
        ).to_dict()
        errors = verdicts["error"]
        good = [i for i, e in enumerate(errors) if not e]
        seen = len(errors)
        if limit and len(good) > limit:
            seen = good[limit - 1] + 1
            good = good[:limit]
        bad = [i for i in range(seen) if errors[i]]
        lines = nonblank_line_numbers(self.jsonl) if bad and self.jsonl is not None else None
        skipped: list[SkippedRecord] = []
        first_error: DataFormatError | None = None
        for i in bad:
            record: str | int | None = verdicts["record"][i] or (None if lines else i)
            err = DataFormatError(
                self.source,
                errors[i],
                line=lines[i] if lines else None,
                record=record,
                field=verdicts["field"][i] or None,
            )
            first_error = first_error or err
            skipped.append(SkippedRecord(error=str(err), line=err.line, record=record))
        check_bad_fraction(
            self.source, self.kind, len(good), len(skipped), seen, first_error, max_bad_fraction
        )
        if len(good) == len(raw):
            return raw, skipped
        selected = raw.select(good, new_fingerprint=fingerprint(step="select", check=key, limit=limit))
        return selected, skipped

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {"error": [], "field": [], "record": []}
        for i in range(len(next(iter(batch.values())))):
            record = {k: v[i] for k, v in batch.items()}
            try:
                parse_row(record, self.kind)
            except (KeyError, TypeError, ValueError) as exc:
                err = row_error(self.source, exc, line=None, record=record)
                out["error"].append(err.message)
                out["field"].append(err.field or "")
                out["record"].append("" if err.record is None else str(err.record))
                continue
            out["error"].append("")
            out["field"].append("")
            out["record"].append("")
        return out
