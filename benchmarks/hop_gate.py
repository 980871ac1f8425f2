"""Hops only for the questions that need them? A gate on the first hop, tried on validation.

Retrieve-then-rerank beats the loop on comparison questions, which name both of their entities:
the question's own hits already hold the evidence, and later hops can only push it out of the
chunk budget. The natural fix is a gate after the first hop: stop there when the question looks
answered, hop on otherwise. This script measures that fix on a loop run's saved traces, so no
model runs again. Every question's first hop is in its trace (each hit's Continue probability,
its floor mark and its rank), so "first hop only" is that hop's pool, selected the way the loop
selects (``first_hop_only``: the loop's own budget choice over the judgements of that hop),
exactly what ``max_hops=1`` keeps.

Reported, per run folder (give the loop's validation runs: settings are chosen on them):

1. By question type: the loop against its first hop alone. Where the first hop alone scores as
   high, the hops cost nothing there; where it scores lower, they earn their keep.
2. Gates: "stop after the first hop when its m-th most probable chunk has a Continue probability
   of at least tau" for m = 2, 3 and a grid of tau, and, as an upper bound for a question-type
   router, the gold type ("comparison" questions stop after the first hop).

    python benchmarks/hop_gate.py \\
        runs/bench_protocol/bm25/models/2wikimultihopqa+musique/validation/2wikimultihopqa/k6-t0.05-f3-tok0.5+fill \\
        runs/bench_protocol/bm25/models/2wikimultihopqa+musique/validation/musique/k6-t0.05-f3-tok0.5+fill

No dev question is read unless you pass a dev run folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rerank_tables import question_type

from efficientrag.config_values import from_dict
from efficientrag.jsonl import read_jsonl
from efficientrag.pipeline.budget import choose_chunks, judgements_from_trace
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.metrics import all_gold, oracle_recall

TAUS = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99)
MS = (2, 3)
# The gold type a question-type router would send to the first hop alone (the upper bound row).
FIRST_HOP_TYPES = frozenset({"comparison"})


def loop_settings(run: Mapping[str, Any], where: str) -> EfficientRAGConfig:
    """The loop settings of a run, read from its fingerprint."""
    try:
        settings = run["fingerprint"]["settings"]["efficientrag"]
    except (KeyError, TypeError) as exc:
        raise ValueError(
            f"{where}: not an EfficientRAG run (no fingerprint.settings.efficientrag.{exc})"
        ) from exc
    return from_dict(EfficientRAGConfig, settings, origin=where, prefix="efficientrag.")


def first_hop_hits(record: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    """The question's own hits at the first hop, in rank order, as the trace recorded them."""
    try:
        return list(record["trace"]["hops"][0]["hits"][0])
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"{where}: record {record.get('id')!r} has no first hop in its trace") from None


def first_hop_only(record: Mapping[str, Any], cfg: EfficientRAGConfig, where: str) -> list[str]:
    """The chunk ids the loop keeps when it stops after the first hop (``max_hops=1``): the
    loop's own budget choice (:func:`efficientrag.pipeline.budget.choose_chunks`) over the
    judgements its trace recorded at that hop."""
    first_hop_hits(record, where)
    judgements = judgements_from_trace(record["trace"]["hops"][:1], where=where)
    kept, _ = choose_chunks(judgements, cfg)
    return [cid for cid, _ in kept]


def gate_open(hits: Sequence[Mapping[str, Any]], m: int, tau: float) -> bool:
    """The gate stops the loop after the first hop: its m-th most probable chunk is at least tau."""
    probs = sorted((float(h.get("continue_prob") or 0.0) for h in hits), reverse=True)
    return len(probs) >= m and probs[m - 1] >= tau


@dataclass
class Question:
    set_name: str
    type: str
    gold: list[str]
    loop: list[str]
    first_hop: list[str]
    hits: list[Mapping[str, Any]]


def load_run(folder: Path) -> list[Question]:
    """A run folder's questions with the loop's chunks and its first hop's alone."""
    run_file, pred_file = folder / "run.json", folder / "predictions.jsonl"
    for f in (run_file, pred_file):
        if not f.is_file():
            raise FileNotFoundError(f"{f}: missing (give an EfficientRAG run folder)")
    settings = loop_settings(json.loads(run_file.read_text()), str(run_file))
    name = folder.parent.name
    out = []
    for i, rec in enumerate(read_jsonl(pred_file), 1):
        if not rec.get("gold_chunk_ids"):
            continue
        hits = first_hop_hits(rec, f"{pred_file}:{i}")
        out.append(
            Question(
                name,
                question_type(rec),
                list(rec["gold_chunk_ids"]),
                list(rec["retrieved_ids"]),
                first_hop_only(rec, settings, f"{pred_file}:{i}"),
                hits,
            )
        )
    return out


def recall_all_gold(kept: Sequence[tuple[Sequence[str], Sequence[str]]]) -> tuple[float, float, float]:
    """Recall, all-gold (%) and chunks per question of (kept ids, gold ids) pairs."""
    n = max(1, len(kept))
    return (
        100 * sum(oracle_recall(ids, gold) for ids, gold in kept) / n,
        100 * sum(all_gold(ids, gold) for ids, gold in kept) / n,
        sum(len(ids) for ids, _ in kept) / n,
    )


def score(questions: Sequence[Question], pick: Callable[[Question], list[str]]) -> tuple[float, float, float]:
    """``recall_all_gold`` of the ids ``pick`` keeps for each question."""
    return recall_all_gold([(pick(q), q.gold) for q in questions])


def cell(values: tuple[float, float, float]) -> str:
    """A table cell: recall / all-gold (chunks)."""
    return f"{values[0]:.1f} / {values[1]:.1f} ({values[2]:.2f})"


def type_table(questions: Sequence[Question]) -> list[str]:
    lines = ["| set | type | n | loop | first hop only |", "|---|---|---|---|---|"]
    groups: dict[tuple[str, str], list[Question]] = {}
    for q in questions:
        groups.setdefault((q.set_name, q.type), []).append(q)
    for (set_name, qtype), qs in sorted(groups.items()):
        loop, first = score(qs, lambda q: q.loop), score(qs, lambda q: q.first_hop)
        lines.append(f"| {set_name} | {qtype} | {len(qs)} | {cell(loop)} | {cell(first)} |")
    return lines


def gate_table(questions: Sequence[Question]) -> list[str]:
    sets = sorted({q.set_name for q in questions})
    of = {s: [q for q in questions if q.set_name == s] for s in sets}
    lines = [
        "| gate | " + " | ".join(f"{s}: recall / all-gold (chunks), stopped" for s in sets) + " |",
        "|---" * (len(sets) + 1) + "|",
    ]

    def row(label: str, stops: Callable[[Question], bool]) -> str:
        cells = []
        for s in sets:
            qs = of[s]
            stopped = sum(stops(q) for q in qs)
            cells.append(
                f"{cell(score(qs, lambda q: q.first_hop if stops(q) else q.loop))}, {stopped}/{len(qs)}"
            )
        return f"| {label} | " + " | ".join(cells) + " |"

    lines.append(row("none (the loop)", lambda q: False))
    for m in MS:
        for tau in TAUS:
            lines.append(row(f"m={m}, tau={tau}", lambda q, m=m, tau=tau: gate_open(q.hits, m, tau)))
    lines.append(
        row("gold type is comparison (upper bound of a type router)", lambda q: q.type in FIRST_HOP_TYPES)
    )
    lines.append(row("always (first hop only)", lambda q: True))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "runs", nargs="+", type=Path, help="EfficientRAG run folders (run.json, predictions.jsonl)"
    )
    args = parser.parse_args(argv)
    try:
        questions = [q for folder in args.runs for q in load_run(folder)]
    except (FileNotFoundError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    if not questions:
        print("no question with gold chunk ids in the given runs", file=sys.stderr)
        return 2
    print("Command: `python benchmarks/hop_gate.py " + " ".join(str(f) for f in args.runs) + "`\n")
    print("By question type, recall / all-gold (chunks per question):\n")
    print("\n".join(type_table(questions)))
    print("\nStop after the first hop when the gate says so:\n")
    print("\n".join(gate_table(questions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
