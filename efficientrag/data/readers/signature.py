"""Which benchmark a record comes from, by the keys only that benchmark's files carry.

HotpotQA, 2WikiMultihopQA and MuSiQue share field names (``question``, ``answer``, ``context``,
``supporting_facts``), so one reader can parse another's file without a fault and the run goes on
under the wrong name: 2Wiki's dev file read as HotpotQA evaluates, and its table says "hotpotqa".
Each file is told apart by a field no other of the three writes; a reader refuses a file whose first
record carries another's, naming both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from efficientrag.data.readers.source import SourceRecord
from efficientrag.errors import DataFormatError


@dataclass(frozen=True)
class Signature:
    """A benchmark's tell: ``dataset`` (the reader's name), ``label`` (as people write it) and the
    ``keys`` every record of its original files has, and no other benchmark's does."""

    dataset: str
    label: str
    keys: tuple[str, ...]
    absent: tuple[str, ...] = ()

    def matches(self, record: dict[str, Any]) -> bool:
        return all(k in record for k in self.keys) and not any(k in record for k in self.absent)


SIGNATURES = (
    Signature("musique", "MuSiQue", ("paragraphs", "question_decomposition")),
    Signature("2wikimultihopqa", "2WikiMultihopQA", ("evidences",)),
    # HotpotQA's distractor and full-wiki files grade questions by ``level``; 2Wiki's never do.
    Signature("hotpotqa", "HotpotQA", ("level", "supporting_facts"), absent=("evidences",)),
)
LABELS = {s.dataset: s.label for s in SIGNATURES}
# The toy world is written in MuSiQue's format and read by its reader.
SAME_FORMAT = {"toy": "musique"}


def record_signature(record: Any) -> Signature | None:
    """The benchmark whose tell ``record`` carries, or None (another format, or a bare record)."""
    if not isinstance(record, dict):
        return None
    return next((s for s in SIGNATURES if s.matches(record)), None)


def check_signature(dataset: str, path: str | Path, first: SourceRecord) -> None:
    """Refuse a file of another benchmark read under ``dataset``'s name.

    Args:
        dataset: The reader's dataset name (``hotpotqa``, ``2wikimultihopqa``, ``musique``, ``toy``);
            any other name is not checked.
        path: The file, for the message.
        first: The file's first readable record, which decides.

    Raises:
        DataFormatError: The first record carries another benchmark's tell, naming both and the
            ``--dataset`` that reads it.
    """
    expected = SAME_FORMAT.get(dataset, dataset)
    if expected not in LABELS:
        return
    found = record_signature(first.obj)
    if found is None or found.dataset == expected:
        return
    tell = " and ".join(repr(k) for k in found.keys)
    raise DataFormatError(
        path,
        f"this is a {found.label} file (its records carry {tell}), not {LABELS[expected]}: read it "
        f"with --dataset {found.dataset}",
        line=first.line,
        record=first.index,
    )
