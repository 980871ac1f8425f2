"""Is a gap between two runs on the same questions more than a few questions' noise?

A goal such as "the loop, with at most 7 chunks, reaches Direct-R@10" is read on samples. Where it falls short by
a point on 350 questions, or by four on 70, the reader needs to know whether that is a handful of
questions that another draw of the dev set would reverse. This script pairs two run folders
question by question, on recall and on all-gold, and prints the mean gap with its paired bootstrap
interval (``efficientrag.eval.paired_bootstrap``), for all questions, for the part of them held back
from design (``efficientrag.data.split.held_back``: no loop variant is designed or chosen on it), and
for each question type (MuSiQue by its hop count).

    python benchmarks/paired_gap.py \\
        --pair "HotpotQA, BM25" RUNS/dev/hotpotqa/LOOP RUNS/dev/hotpotqa/direct_r_k@10 \\
        [--pair LABEL A B ...] [--resamples 10000] [--seed 0] [--shared-data ../shared/data]

A side is a run folder (``predictions.jsonl`` and ``run.json``). A ranked run, like Direct-R's, is
read at a cut-off written after it (``FOLDER@10``); a set run, like the loop's, is read whole. Both
sides of a pair must answer the same questions over the same index: their fingerprints' ``data``
and ``index`` must match, or the pair is refused. The numbers are a diagnosis of what was reported,
nothing is chosen on them.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from report_output import publish
from rerank_tables import TYPE_FILES, known_types, question_type

from efficientrag.data.split import held_back
from efficientrag.eval.paired_bootstrap import PairedGap, paired_bootstrap
from efficientrag.experiment.run_binding import FINGERPRINT_FILE, PREDICTIONS_FILE, read_fingerprint
from efficientrag.jsonl import read_jsonl

ALL = "all"
HELD_BACK = "held back"  # the part of the questions no loop variant was designed or chosen on
# The fingerprint keys both sides must share: the same questions, searched in the same index.
SHARED_KEYS = ("data", "index")


@dataclass(frozen=True)
class Side:
    """One run folder, read whole (``k`` None) or at its ranked cut-off ``k``."""

    folder: Path
    k: int | None

    @property
    def name(self) -> str:
        return f"{self.folder.name}@{self.k}" if self.k is not None else self.folder.name


@dataclass(frozen=True)
class Row:
    """One group of questions: both sides' means and the two paired gaps (a minus b)."""

    group: str
    n: int
    chunks: tuple[float, float]
    recall: tuple[float, float]
    all_gold: tuple[float, float]
    recall_gap: PairedGap
    all_gold_gap: PairedGap


def parse_side(text: str) -> Side:
    """``FOLDER`` or ``FOLDER@K``: a run folder, read at cut-off K when its lists are ranked."""
    folder, sep, k = text.rpartition("@")
    if not sep or not k.isdigit():
        return Side(Path(text), None)
    return Side(Path(folder), int(k))


def side_scores(side: Side) -> dict[str, dict[str, Any]]:
    """Question id -> its type and scores on this side (recall, all-gold, chunks).

    Raises:
        ValueError: A missing file, a ranked run read without a cut-off (or a set run with one), or
            a record without the scores asked for, named by file, record and field.
    """
    path = side.folder / PREDICTIONS_FILE
    if not path.is_file():
        raise ValueError(f"{path}: no predictions; pass a run folder")
    key = str(side.k) if side.k is not None else ALL
    out: dict[str, dict[str, Any]] = {}
    for line, rec in enumerate(read_jsonl(path), start=1):
        retrieval = rec.get("retrieval") or {}
        if key not in retrieval:
            hint = f"read it as {side.folder}@K" if side.k is None else "a set run takes no @K"
            raise ValueError(
                f"{path}, record {line} (id {rec.get('id')!r}): field retrieval[{key!r}] is missing"
                f" (it has {sorted(retrieval)}); {hint}"
            )
        scores = retrieval[key]
        out[str(rec["id"])] = {
            "type": question_type(rec),
            "recall": float(scores["recall"]),
            "all_gold": 1.0 if scores["all_gold"] else 0.0,
            "chunks": float(scores["num_chunks"]),
        }
    return out


def check_same_inputs(a: Side, b: Side) -> None:
    """Refuse a pair whose runs did not answer the same questions over the same index."""
    prints = []
    for side in (a, b):
        fingerprint = read_fingerprint(side.folder)
        if fingerprint is None:
            raise ValueError(f"{side.folder / FINGERPRINT_FILE}: missing or unreadable fingerprint")
        prints.append(fingerprint)
    for key in SHARED_KEYS:
        if prints[0].get(key) != prints[1].get(key):
            raise ValueError(
                f"{a.folder} and {b.folder}: fingerprint field {key!r} differs"
                f" ({prints[0].get(key)!r} against {prints[1].get(key)!r}); they are not the same questions"
                " over the same index"
            )


def paired_rows(
    a: Mapping[str, Mapping[str, Any]],
    b: Mapping[str, Mapping[str, Any]],
    types: Mapping[str, str],
    *,
    resamples: int,
    seed: int,
) -> list[Row]:
    """All questions first, then those held back from design, then each question type, each with
    both sides' means and gaps.

    Args:
        a: The first side's scores by question id (:func:`side_scores`).
        b: The second side's, on the same questions.
        types: Types for ids whose records name none (HotpotQA's first 100 dev questions).
        resamples: Bootstrap resamples per gap.
        seed: The bootstrap's seed (the same for every group, so a row can be reproduced alone).

    Raises:
        ValueError: A question on one side only, named by id.
    """
    only = sorted(set(a) ^ set(b))
    if only:
        raise ValueError(
            f"question {only[0]!r} is on one side only ({len(only)} such); pair runs of one question set"
        )
    by_type: dict[str, list[str]] = {}
    for qid in sorted(a):
        group = types.get(qid, "untyped") if a[qid]["type"] == "untyped" else a[qid]["type"]
        by_type.setdefault(group, []).append(qid)
    groups = [(ALL, sorted(a))]
    kept_back = [qid for qid in sorted(a) if held_back(qid)]
    if kept_back:
        groups.append((HELD_BACK, kept_back))
    if len(by_type) > 1:  # one type only: its row would repeat the first
        groups += sorted(by_type.items())
    return [_row(group, ids, a, b, resamples=resamples, seed=seed) for group, ids in groups]


def _row(group: str, ids: Sequence[str], a: Mapping, b: Mapping, *, resamples: int, seed: int) -> Row:
    def mean(side: Mapping, field: str) -> float:
        return sum(side[q][field] for q in ids) / len(ids)

    def gap(field: str) -> PairedGap:
        return paired_bootstrap(
            [a[q][field] for q in ids], [b[q][field] for q in ids], resamples=resamples, seed=seed
        )

    return Row(
        group=group,
        n=len(ids),
        chunks=(mean(a, "chunks"), mean(b, "chunks")),
        recall=(mean(a, "recall"), mean(b, "recall")),
        all_gold=(mean(a, "all_gold"), mean(b, "all_gold")),
        recall_gap=gap("recall"),
        all_gold_gap=gap("all_gold"),
    )


def _gap_cell(g: PairedGap) -> str:
    return f"{100 * g.mean:+.1f} [{100 * g.low:+.1f}, {100 * g.high:+.1f}] ({100 * g.at_or_above:.0f}%)"


def render(label: str, a: Side, b: Side, rows: Sequence[Row]) -> list[str]:
    """One pair's table: recall / all-gold of each side, each gap with its interval and the share
    of resamples where ``a`` is at or above ``b``."""
    confidence = round(100 * rows[0].recall_gap.confidence)
    lines = [
        f"**{label}**: `{a.name}` (a) against `{b.name}` (b); gap a - b in points, [{confidence}% interval]"
        " (share of resamples with a at or above b)",
        "",
        "| questions | n | chunks a / b | a: recall / all-gold | b: recall / all-gold | recall gap | all-gold gap |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.group} | {r.n} | {r.chunks[0]:.2f} / {r.chunks[1]:.2f}"
            f" | {100 * r.recall[0]:.1f} / {100 * r.all_gold[0]:.1f}"
            f" | {100 * r.recall[1]:.1f} / {100 * r.all_gold[1]:.1f}"
            f" | {_gap_cell(r.recall_gap)} | {_gap_cell(r.all_gold_gap)} |"
        )
    return [*lines, ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pair",
        nargs=3,
        action="append",
        required=True,
        metavar=("LABEL", "A", "B"),
        help="a label and two run folders (FOLDER or FOLDER@K for a ranked run)",
    )
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shared-data", type=Path, default=None, help="for HotpotQA's question types")
    parser.add_argument("--out", type=Path, default=None, help="also write the tables to this Markdown file")
    args = parser.parse_args(argv)
    command = shlex.join(["python", "benchmarks/paired_gap.py", *(sys.argv[1:] if argv is None else argv)])
    types: dict[str, str] = {}
    for dataset in TYPE_FILES if args.shared_data else ():
        types |= known_types(args.shared_data, dataset)
    lines = [f"Command: `{command}`", ""]
    try:
        for label, a_text, b_text in args.pair:
            a, b = parse_side(a_text), parse_side(b_text)
            check_same_inputs(a, b)
            rows = paired_rows(
                side_scores(a), side_scores(b), types, resamples=args.resamples, seed=args.seed
            )
            lines += render(label, a, b, rows)
    except ValueError as exc:
        print(f"paired_gap: {exc}", file=sys.stderr)
        return 2
    text = "\n".join(lines)
    publish(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
