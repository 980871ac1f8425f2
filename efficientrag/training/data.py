"""Training rows from JSONL, tokenized once, as a map-style dataset of encoded inputs.

A malformed row is skipped and recorded with its file, line and reason (``skipped_rows.jsonl`` in
the run folder), never dropped silently; a file with more bad rows than the configured fraction
fails early with the first error, since that is a broken file rather than a few bad records.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from torch.utils.data import Dataset
from tqdm.auto import tqdm

from efficientrag.data.errors import DataFormatError, SkippedRecord
from efficientrag.models.base import WordClassifier
from efficientrag.models.encoding import EncodedInput
from efficientrag.models.inputs import FilterRow, LabelerRow

ROW_TYPES = {"labeler": LabelerRow, "filter": FilterRow}
SPLIT_FILES = {"train": "train.jsonl", "validation": "validation.jsonl"}
ENCODE_CHUNK = 2048


@dataclass
class LoadedRows:
    path: Path
    rows: list[LabelerRow] | list[FilterRow]
    skipped: list[SkippedRecord]


def read_rows(path: str | Path, kind: str, *, limit: int = 0, max_bad_fraction: float = 0.01) -> LoadedRows:
    """Parse every line into a row; bad lines are skipped with their reason."""
    path = Path(path)
    row_type = ROW_TYPES[kind]
    rows = []
    skipped: list[SkippedRecord] = []
    first_error: DataFormatError | None = None
    seen = 0
    for lineno, record, parse_error in _numbered(path):
        if limit and len(rows) >= limit:
            break
        seen += 1
        try:
            if parse_error is not None:
                raise ValueError(parse_error)
            row = row_type.from_dict(record)
            _check_labels(row)
        except (KeyError, TypeError, ValueError) as exc:
            field = str(exc.args[0]) if isinstance(exc, KeyError) else None
            message = f"missing field {field!r}" if field else str(exc)
            rec_id = record.get("id") if isinstance(record, dict) else None
            err = DataFormatError(path, message, line=lineno, record=rec_id, field=field)
            first_error = first_error or err
            skipped.append(SkippedRecord(error=str(err), line=lineno, record=rec_id))
            continue
        rows.append(row)
    if not rows:
        raise first_error or DataFormatError(path, f"no {kind} rows in file")
    if seen and len(skipped) / seen > max_bad_fraction:
        raise DataFormatError(
            path,
            f"{len(skipped)} of {seen} rows are malformed (more than max_bad_row_fraction="
            f"{max_bad_fraction}); first: {first_error}",
        )
    return LoadedRows(path=path, rows=rows, skipped=skipped)


def _numbered(path: Path) -> Iterator[tuple[int, dict[str, Any], str | None]]:
    """``(line number, record, parse error)`` for every non-blank line; bad JSON is reported, not raised."""
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                yield lineno, {}, f"not valid JSON ({exc.msg} at column {exc.colno})"
                continue
            if not isinstance(record, dict):
                yield lineno, {}, f"expected a JSON object, got {type(record).__name__}"
                continue
            yield lineno, record, None


def _check_labels(row: LabelerRow | FilterRow) -> None:
    bad = [x for x in row.labels if x not in (0, 1)]
    if bad:
        raise ValueError(f"labels must be 0/1, found {bad[0]!r}")
    lists = (
        {"query_words": row.query_words, "chunk_words": row.chunk_words}
        if isinstance(row, LabelerRow)
        else {"words": row.words}
    )
    for name, words in lists.items():
        odd = [w for w in words if not isinstance(w, str)]
        if odd:
            raise ValueError(f"{name} must be strings, found {odd[0]!r}")


class EncodedDataset(Dataset):
    """Items are ``(index, EncodedInput)`` so the collator can carry row indices along."""

    def __init__(self, encoded: Sequence[EncodedInput], ids: Sequence[str]) -> None:
        self.encoded = list(encoded)
        self.ids = list(ids)
        self.lengths = np.asarray([len(e) for e in self.encoded], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.encoded)

    def __getitem__(self, index: int) -> tuple[int, EncodedInput]:
        return index, self.encoded[index]

    def truncation_stats(self) -> dict[str, float]:
        cut_rows = sum(1 for e in self.encoded if e.truncated_words or e.query_truncated_words)
        cut_words = sum(e.truncated_words for e in self.encoded)
        total_words = sum(e.n_words for e in self.encoded) or 1
        return {
            "rows": len(self.encoded),
            "truncated_rows": cut_rows,
            "truncated_word_fraction": cut_words / total_words,
            "mean_length": float(self.lengths.mean()) if len(self.lengths) else 0.0,
        }


def encode_dataset(
    model: WordClassifier, rows: Sequence[LabelerRow] | Sequence[FilterRow], *, desc: str, show_progress: bool
) -> EncodedDataset:
    encoded: list[EncodedInput] = []
    bar = tqdm(total=len(rows), desc=desc, unit="row", disable=not show_progress)
    for start in range(0, len(rows), ENCODE_CHUNK):
        part = rows[start : start + ENCODE_CHUNK]
        encoded.extend(model.encode_rows(part))  # type: ignore[arg-type]
        bar.update(len(part))
    bar.close()
    return EncodedDataset(encoded, [r.id for r in rows])


def positive_class_weights(datasets: Sequence[EncodedDataset]) -> list[float]:
    """``N / (2 * count)`` per class over target words, as the official ``token_weight_avg.py``."""
    counts = np.zeros(2, dtype=np.float64)
    for ds in datasets:
        for e in ds.encoded:
            if e.word_labels is not None:
                counts += np.bincount(e.word_labels, minlength=2)[:2]
    if (counts == 0).any():
        raise ValueError(f"class_weights='auto' needs both classes in the training labels, counts {counts}")
    return (counts.sum() / (2.0 * counts)).tolist()
