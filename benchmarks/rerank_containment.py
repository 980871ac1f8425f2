"""Does the loop contain its own Labeler as a reranker? Measured on toy worlds no model was trained on.

``budget_policy="rerank"`` makes the loop's first hop the Labeler ranking the question's top N
(``first_top_k``), as ``labeler_rerank`` does, and lets a chunk that a later hop judges into the
chunk budget only by outscoring the lowest kept one. At equal chunks it can then fall below that
reranker only where a later hop's score says more than it should: a calibration error. This script
measures that on two toy worlds that are not the quickstart's (other seeds, other fictional people):

1. The validation world: the loop with ``budget_policy=rerank`` runs once; per-hop Platt scaling
   (``hop_calibration``) is fitted on its traces, and the calibrated setting is chosen over the raw
   one only if its validation score ((recall + all-gold) / 2) is higher.
2. The report world, nothing chosen on it: Direct-R, the Labeler reranking the question's top N, the
   loop at the quickstart's own setting, and the loop with ``rerank`` raw and calibrated; the
   rerank loops against the reranker at the same K with a paired bootstrap interval; the default
   loop against the reranker read at each question's own chunk count; each hop's calibration
   error; and what the later hops swapped into the reranker's top K (gold gained, gold lost).
3. Seconds and Labeler pairs per question beside each, every method timed side by side in this
   process on the report world's first ``--time-sample`` questions (batches of 32, each run by every
   method in a rotating order, models loaded first, one warm-up batch each; 0: not timed).

    python benchmarks/rerank_containment.py                      # after `efficientrag quickstart`
    python benchmarks/rerank_containment.py --budget 4 --questions 200 --out report.md

Runs are cached (fingerprinted) under ``--work-dir``; a rerun with other models or settings redoes them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from report_output import command_line, publish, quickstart_models

from efficientrag.baselines.direct_r import DirectRetrieval
from efficientrag.baselines.labeler_rerank import LabelerRerank, LabelerRerankConfig
from efficientrag.data.schema import Example
from efficientrag.eval.interrupts import main_reporting_interrupts
from efficientrag.eval.job_runs import evaluate_efficientrag_run, evaluate_ranked_run
from efficientrag.eval.paired_bootstrap import paired_bootstrap
from efficientrag.eval.record_scores import mean, question_scores
from efficientrag.eval.side_by_side import time_methods
from efficientrag.experiment.assembly import toy_world_search
from efficientrag.fingerprint import folder_digest
from efficientrag.jsonl import read_jsonl
from efficientrag.pipeline.budget import choose_chunks, judgements_from_trace
from efficientrag.pipeline.calibration import calibrate, calibration_error, fit_hop_calibration, judged_items
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.base import Retriever

TIMING_BATCH = 32
Record = dict[str, Any]
DEFAULT_ROW = "loop, quickstart setting"


def loop_run(
    cfg: EfficientRAGConfig, retriever: Retriever, examples: list[Example], out: Path
) -> list[Record]:
    evaluate_efficientrag_run(cfg, retriever, examples, out, progress=False)
    return list(read_jsonl(out / "predictions.jsonl"))


def reranker_records(
    labeler: Path, n: int, k: int, retriever: Retriever, examples: list[Example], out: Path
) -> list[Record]:
    method = LabelerRerank(retriever, None, LabelerRerankConfig(labeler=str(labeler), top_n=n))
    evaluate_ranked_run(method, examples, out, ks=sorted({k, n}), progress=False)
    return list(read_jsonl(out / "predictions.jsonl"))


def swaps(records: Sequence[Record], budget: int, cal: list[list[float]] | None = None) -> dict[str, float]:
    """What the later hops changed in the loop's own first-hop top ``budget`` (its first hop's
    judgements by calibrated score, ties by rank): questions changed, gold chunks gained and lost."""
    changed = gained = lost = 0
    for r in records:
        reranker = set(_first_hop_ranking(r, cal)[:budget])
        kept, gold = set(r["retrieved_ids"]), set(r["gold_chunk_ids"])
        changed += kept != reranker
        gained += len((kept - reranker) & gold)
        lost += len((reranker - kept) & gold)
    return {
        "questions": float(len(records)),
        "changed": float(changed),
        "gained": float(gained),
        "lost": float(lost),
    }


def hop_judgements(records: Sequence[Record]) -> list[Any]:
    out = []
    for r in records:
        j = judgements_from_trace(r["trace"]["hops"])
        out += judged_items(j.by_hop, r["gold_chunk_ids"], j.rank_by_hop)
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--models",
        type=Path,
        default=Path("runs/quickstart/models"),
        help="folder with labeler/best and filter/best (the quickstart's)",
    )
    p.add_argument("--work-dir", type=Path, default=Path("runs/bench_containment"))
    p.add_argument("--validation-seed", type=int, default=1)
    p.add_argument("--report-seed", type=int, default=2)
    p.add_argument("--questions", type=int, default=150, help="questions per toy world")
    p.add_argument("--budget", type=int, default=5, help="chunks per question (the reranker's K)")
    p.add_argument("--first-top-k", type=int, default=20, help="the reranker's N: the first hop's hits")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--time-sample", type=int, default=64, help="questions timed per method (0: none)")
    p.add_argument("--out", type=Path, help="also write the report here (Markdown)")
    args = p.parse_args(argv)
    if min(args.questions, args.budget, args.first_top_k) < 1 or args.budget > args.first_top_k:
        p.error("--questions, --budget and --first-top-k must be >= 1, and --budget <= --first-top-k")
    if args.time_sample < 0:
        p.error("--time-sample must be >= 0")
    if args.validation_seed == args.report_seed or 0 in (args.validation_seed, args.report_seed):
        p.error("--validation-seed and --report-seed must differ from each other and from the quickstart's 0")
    return args


@dataclass
class Validation:
    """What the validation world chose: the fitted calibrations and each variant's score."""

    calibrations: dict[str, list[list[float]] | None]
    scores: dict[str, float]
    default_score: float
    judged: list[Any]

    @property
    def chosen(self) -> str:
        return max(self.scores, key=lambda v: self.scores[v])  # the first of equal ones: raw


def validate(args: argparse.Namespace, base: EfficientRAGConfig, rerank: EfficientRAGConfig) -> Validation:
    """The rerank loop and the quickstart's loop on the validation world; each calibration fitted on
    the rerank loop's traces and scored by replaying its budget choice (no model run again)."""
    examples, search = toy_world_search(args.validation_seed, args.questions, args.work_dir)
    raw = loop_run(rerank, search, examples, args.work_dir / "validation" / "rerank")
    default = loop_run(base, search, examples, args.work_dir / "validation" / "loop-quickstart")
    judged = hop_judgements(raw)
    calibrations = {
        "raw": None,
        "calibrated": fit_hop_calibration(judged, max_hops=base.max_hops),
        "calibrated, with rank": fit_hop_calibration(judged, max_hops=base.max_hops, with_rank=True),
    }
    scored = {}
    for name, cal in calibrations.items():
        cfg = replace(rerank, hop_calibration=cal)
        chosen = [
            {
                **r,
                "retrieved_ids": [
                    c for c, _ in choose_chunks(judgements_from_trace(r["trace"]["hops"]), cfg)[0]
                ],
            }
            for r in raw
        ]
        scored[name] = protocol(chosen)
    return Validation(calibrations, scored, protocol(default), judged)


def protocol(records: Sequence[Record]) -> float:
    """The protocol score: the mean of recall and all-gold, in %."""
    return mean([(r + a) / 2 for r, a in question_scores(records)])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    labeler, filter_ = quickstart_models(args.models)
    base = EfficientRAGConfig(labeler=str(labeler), filter=str(filter_))
    rerank = replace(base, first_top_k=args.first_top_k, chunk_budget=args.budget, budget_policy="rerank")
    val = validate(args, base, rerank)
    loops = {DEFAULT_ROW: base} | {
        f"loop, rerank ({name})": replace(rerank, hop_calibration=cal)
        for name, cal in val.calibrations.items()
    }

    examples, search = toy_world_search(args.report_seed, args.questions, args.work_dir)
    dev, b, n = args.work_dir / "report", args.budget, args.first_top_k
    evaluate_ranked_run(
        DirectRetrieval.ranking(search, [b]), examples, dev / "direct_r", ks=[b], progress=False
    )
    records = {"Direct-R": list(read_jsonl(dev / "direct_r" / "predictions.jsonl"))}
    for name, cfg in loops.items():
        records[name] = loop_run(cfg, search, examples, dev / _slug(name))
    records["Labeler rerank"] = reranker_records(
        labeler, n, b, search, examples, dev / f"labeler_rerank_n{n}"
    )

    sample = examples[: args.time_sample]
    seconds = timed(args, loops, labeler, search, sample) if sample else {}
    text = "\n".join(render(args, records, loops, seconds, val, labeler, filter_))
    publish(text, args.out)
    return 0


def _slug(name: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in name).split())


def timed(
    args: argparse.Namespace,
    loops: dict[str, EfficientRAGConfig],
    labeler: Path,
    search: Retriever,
    examples: list[Example],
) -> dict[str, float]:
    from efficientrag.models import Filter, Labeler
    from efficientrag.pipeline.efficientrag import EfficientRAG

    models = Labeler.from_pretrained(labeler), Filter.from_pretrained(loops[DEFAULT_ROW].filter)
    method = LabelerRerank(search, None, LabelerRerankConfig(labeler=str(labeler), top_n=args.first_top_k))
    method.setup()

    def loop(cfg: EfficientRAGConfig) -> Callable[[list[Example]], Any]:
        rag = EfficientRAG(search, *models, cfg)
        return lambda batch: rag.retrieve_batch([ex.question for ex in batch])

    methods: dict[str, Callable[[list[Example]], Any]] = {
        "Direct-R": lambda batch: search.search([ex.question for ex in batch], args.budget),
        "Labeler rerank": method.run_batch,
    }
    return time_methods(
        methods | {name: loop(cfg) for name, cfg in loops.items()}, examples, batch_size=TIMING_BATCH
    )


def first_hop_only(records: Sequence[Record], cal: list[list[float]] | None, budget: int) -> list[Record]:
    """Each record cut to its first hop's best ``budget`` chunks by the calibrated score: the
    reranker the loop contains (the Labeler's ranking; fused with the search's with a rank term)."""
    out = []
    for r in records:
        ranked = _first_hop_ranking(r, cal)
        out.append({**r, "retrieved_ids": ranked[:budget]})
    return out


def _first_hop_ranking(record: Record, cal: list[list[float]] | None) -> list[str]:
    rows = [
        (rank, row)
        for rank, row in enumerate(record["trace"]["hops"][0]["hits"][0])
        if "continue_prob" in row
    ]
    scored = [
        (calibrate(row["continue_prob"], 0, cal, rank) if cal else row["continue_prob"], rank, row["id"])
        for rank, row in rows
    ]
    return [cid for _, _, cid in sorted(scored, key=lambda t: (-t[0], t[1]))]


def render(
    args: argparse.Namespace,
    records: dict[str, list[Record]],
    loops: dict[str, EfficientRAGConfig],
    seconds: dict[str, float],
    val: Validation,
    labeler: Path,
    filter_: Path,
) -> list[str]:
    b, n = args.budget, args.first_top_k
    at_b = question_scores(records["Labeler rerank"], lambda r: b)
    shown = ", ".join(f"{k} {v:.2f}" for k, v in val.scores.items())
    lines = [
        f"# The loop containing its Labeler as a reranker (toy worlds, seeds {args.validation_seed} / "
        f"{args.report_seed}, {args.questions} questions each)",
        "",
        "    " + command_line(__file__),
        "",
        f"Models: Labeler {folder_digest(str(labeler))[:12]}, Filter {folder_digest(str(filter_))[:12]} "
        f"({args.models}). Budget K = {b}, the reranker's N = {n}. On the validation world (seed "
        f"{args.validation_seed}) `hop_calibration` was fitted to the rerank loop's traces: "
        f"{val.calibrations['calibrated']} (probability only), {val.calibrations['calibrated, with rank']} "
        f"(with the rank); validation scores ((recall + all-gold) / 2, replayed): {shown}; chosen: "
        f"**{val.chosen}** (the quickstart's loop scores {val.default_score:.2f} there at its own chunk "
        f"count). Nothing was chosen on the report world (seed {args.report_seed}).",
        "",
        "| method | recall / all-gold | chunks | Labeler pairs / q | s / q | vs Labeler rerank: recall gap [95%] | all-gold gap [95%] |",
        "|---|---|---|---|---|---|---|",
        _row(
            "Direct-R", question_scores(records["Direct-R"], lambda r: b), None, float(b), 0.0, seconds, args
        ),
        _row(
            f"Labeler rerank N={n}, K={b}",
            at_b,
            None,
            float(b),
            float(n),
            seconds,
            args,
            key="Labeler rerank",
        ),
    ]
    for name in loops:
        recs = records[name]
        own_k = {r["id"]: len(r["retrieved_ids"]) for r in recs}
        # The quickstart's loop keeps as many chunks as it finds: the reranker is read at each
        # question's own count; the rerank loops keep K, as the reranker does.
        ref = (
            at_b
            if name != DEFAULT_ROW
            else question_scores(records["Labeler rerank"], lambda r, own_k=own_k: own_k[r["id"]])
        )
        chunks = mean([len(r["retrieved_ids"]) for r in recs])
        pairs_q = mean([r["counters"].get("labeler_pairs", 0.0) for r in recs])
        label = f"**{name}**" if name == f"loop, rerank ({val.chosen})" else name
        lines.append(_row(label, question_scores(recs), ref, chunks, pairs_q, seconds, args, key=name))
    fused = first_hop_only(
        records["loop, rerank (calibrated, with rank)"], val.calibrations["calibrated, with rank"], b
    )
    lines.append(
        _row(
            f"its first hop alone: the Labeler fused with the search's rank, K={b}",
            question_scores(fused),
            at_b,
            float(b),
            float(n),
            seconds,
            args,
            key="",
        )
    )
    chosen, default = (
        question_scores(records[f"loop, rerank ({val.chosen})"]),
        question_scores(records[DEFAULT_ROW]),
    )
    lines += [
        "",
        f"The chosen rerank loop against the quickstart's loop ({mean([len(r['retrieved_ids']) for r in records[DEFAULT_ROW]]):.2f} "
        f"chunks a question, the rerank loop {b}): recall {paired_gap_cell([x for x, _ in chosen], [x for x, _ in default], args.resamples)}, "
        f"all-gold {paired_gap_cell([y for _, y in chosen], [y for _, y in default], args.resamples)}.",
    ]
    return lines + calibration_lines(records, val) + swap_lines(records, val, b)


def _row(
    name: str,
    s: list[tuple[float, float]],
    ref: list[tuple[float, float]] | None,
    chunks: float,
    pairs_q: float,
    seconds: dict[str, float],
    args: argparse.Namespace,
    key: str | None = None,
) -> str:
    key = name if key is None else key
    cells = [
        f"{mean([x for x, _ in s]):.1f} / {mean([y for _, y in s]):.1f}",
        f"{chunks:.2f}",
        f"{pairs_q:.1f}",
        f"{seconds[key]:.3f}" if key in seconds else "not timed",
    ]
    if ref is None:
        cells += ["", ""]
    else:
        cells += [
            paired_gap_cell([x for x, _ in s], [x for x, _ in ref], args.resamples),
            paired_gap_cell([y for _, y in s], [y for _, y in ref], args.resamples),
        ]
    return f"| {name} | " + " | ".join(cells) + " |"


def calibration_lines(records: dict[str, list[Record]], val: Validation) -> list[str]:
    lines = [
        "",
        "Calibration error per hop (ECE, in points; gold rate / mean score):",
        "",
        "| set | hop | judgements | gold rate | raw: mean score, ECE | calibrated: mean score, ECE | "
        "with rank: mean score, ECE |",
        "|---|---|---|---|---|---|---|",
    ]
    report = hop_judgements(records["loop, rerank (raw)"])
    for label, judged in (("validation", val.judged), ("report", report)):
        raw = calibration_error(judged, None)
        cal = calibration_error(judged, val.calibrations["calibrated"])
        ranked = calibration_error(judged, val.calibrations["calibrated, with rank"])
        for hop in raw:
            cells = [
                f"{100 * e[hop]['mean_score']:.1f}, {100 * e[hop]['ece']:.1f}" for e in (raw, cal, ranked)
            ]
            lines.append(
                f"| {label} | {hop} | {raw[hop]['n']:.0f} | {100 * raw[hop]['gold_rate']:.1f} | "
                + " | ".join(cells)
                + " |"
            )
    return lines


def swap_lines(records: dict[str, list[Record]], val: Validation, budget: int) -> list[str]:
    lines = ["", f"What the later hops changed in the loop's own first-hop top {budget} (report world):", ""]
    for name, cal in val.calibrations.items():
        s = swaps(records[f"loop, rerank ({name})"], budget, cal)
        lines.append(
            f"- loop, rerank ({name}): {s['changed']:.0f} of {s['questions']:.0f} questions changed; gold "
            f"chunks gained {s['gained']:.0f}, lost {s['lost']:.0f}."
        )
    return lines


if __name__ == "__main__":
    sys.exit(main_reporting_interrupts(main))


def paired_gap_cell(a: Sequence[float], b: Sequence[float], resamples: int) -> str:
    return paired_bootstrap(a, b, resamples=resamples).cell()
