"""The pairs the teacher's own loop meets: recorded on the training questions, cut into rows.

The synthesized rows hold a few (query, chunk) pairs a question; the loop that the student will
replace meets 45-70 (every hit of every hop), most of them pairs no synthesized row covers. The
teacher's loop runs over the training questions and its observer records each Labeler and Filter
decision with its probabilities, appended batch by batch (the self-training recorder,
:func:`efficientrag.adapt.self_training.record_decisions`: a killed run resumes where it stopped,
nothing lost or recorded twice).

Each recorded pair becomes a row labeled with the teacher's own decisions at probability 0.5 (its
arg-max), not at the loop's thresholds: the hard labels then say what the teacher's outputs say, so
the student is calibrated like the teacher and the loop's thresholds mean the same for both. (A
tag threshold of 0.05 as hard label would teach the student to call Continue what the teacher
gives 0.06, and to give it 0.9.) Terminate rows have no useful words, as synthesized ones. The
soft targets need no file: the training loop asks the teacher on every batch.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from efficientrag.data.split import TRAIN, VALIDATION
from efficientrag.errors import InvalidArgumentError
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.models.inputs import TAG_CONTINUE, TAG_TERMINATE, FilterRow, LabelerRow

TEACHER_DATASET = "teacher-loop"
QUESTION_PREFIX = "teacher/"
DECISION = 0.5  # the teacher's arg-max


def rows_from_pairs(
    decisions: str | Path,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, int]]:
    """(Labeler rows, Filter rows, counts) from a recorded ``decisions.jsonl``: every pair and
    every Filter input, labeled with the teacher's decisions."""
    labeler: list[dict[str, Any]] = []
    filt: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    meta = {"dataset": TEACHER_DATASET, "type": "", "idx": 0, "hop": 0, "rank": 0}
    for rec in read_jsonl(decisions, allow_torn_tail=True):
        qid = QUESTION_PREFIX + str(rec["id"])
        counts["questions"] += 1
        for j, pair in enumerate(rec["labeler"]):
            keep = pair["p"] >= DECISION
            labels = [int(keep and x >= DECISION) for x in pair["words"]]
            tag = TAG_CONTINUE if keep else TAG_TERMINATE
            row = LabelerRow(f"{qid}#p{j}", qid, pair["query"], pair["chunk"], labels, tag, meta=meta)
            labeler.append(row.to_dict())
            counts["continue_rows" if keep else "terminate_rows"] += 1
        for j, call in enumerate(rec["filter"]):
            labels = [int(x >= DECISION) for x in call["probs"]]
            filt.append(FilterRow(f"{qid}#f{j}", qid, call["words"], labels, meta).to_dict())
            counts["filter_rows"] += 1
    return labeler, filt, dict(counts)


def write_pair_rows(decisions: str | Path, out: str | Path) -> dict[str, int]:
    """``out/{labeler,filter}/train.jsonl`` from the record (validation files empty: a student's
    best step is chosen on the synthesized validation rows' gold labels, not on the teacher's)."""
    out = Path(out)
    labeler, filt, counts = rows_from_pairs(decisions)
    if not labeler:
        raise InvalidArgumentError(
            f"{decisions}: the teacher's loop met no (query, chunk) pair; check the questions"
        )
    for kind, rows in (("labeler", labeler), ("filter", filt)):
        write_jsonl(out / kind / f"{TRAIN}.jsonl", rows)
        write_jsonl(out / kind / f"{VALIDATION}.jsonl", [])
    return counts
