"""Fewer Labeler pairs, chosen on validation with cost in the objective (toy worlds no model saw).

The loop's price over a reranker is its pairs (``cost_profile.py``): every later-hop query has its
``top_k`` hits judged, most of them noise. Candidates keep the first hop at ``first_top_k=10`` (the
question's own hits, as today) and judge fewer hits at later hops (``top_k``), or cap a question's
pairs (``pair_budget``). The rule, fixed before any run: on the validation world (seed 1), the
candidate with the fewest mean pairs whose score ((recall + all-gold) / 2) is within ``--tolerance``
points of today's setting's; nothing is chosen on the report world (seed 2), where each candidate is
reported against today's setting with paired 95% intervals, its chunks and pairs per question, and
its seconds per question (float32 and, where the CPU has bfloat16 kernels, bf16; batches of 32,
each run by every setting in a rotating order, on the first ``--time-sample`` questions).

    python benchmarks/pair_cost.py                           # after `efficientrag quickstart`
    python benchmarks/pair_cost.py --out docs/reports/pair_cost_toy.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from report_output import publish, title_block

from efficientrag.eval.interrupts import main_reporting_interrupts
from efficientrag.eval.job_runs import evaluate_efficientrag_run
from efficientrag.eval.paired_bootstrap import paired_bootstrap
from efficientrag.eval.record_scores import mean, question_scores
from efficientrag.eval.side_by_side import time_methods
from efficientrag.experiment.assembly import toy_world_search
from efficientrag.fingerprint import folder_digest
from efficientrag.jsonl import read_jsonl
from efficientrag.pipeline.config import EfficientRAGConfig

TODAY = "today (top_k 10)"
CANDIDATES: dict[str, dict[str, Any]] = {
    TODAY: {},
    "later hops top 6": {"first_top_k": 10, "top_k": 6},
    "later hops top 4": {"first_top_k": 10, "top_k": 4},
    "later hops top 3": {"first_top_k": 10, "top_k": 3},
    "pair budget 20": {"pair_budget": 20},
    "pair budget 15": {"pair_budget": 15},
}
Record = dict[str, Any]


def score(records: Sequence[Record]) -> float:
    return mean([(r + a) / 2 for r, a in question_scores(records)])


def loop_run(cfg: EfficientRAGConfig, search: Any, examples: list, out: Path) -> list[Record]:
    """The loop's run folder on ``examples`` (resumed or reused when it exists), read back."""
    evaluate_efficientrag_run(cfg, search, examples, out, progress=False)
    return list(read_jsonl(out / "predictions.jsonl"))


def pairs(records: Sequence[Record]) -> list[float]:
    return [r["counters"].get("labeler_pairs", 0.0) for r in records]


def choose(runs: dict[str, list[Record]], tolerance: float) -> str:
    """The fewest mean pairs among the candidates within ``tolerance`` of today's score (today's
    setting when none is)."""
    floor = score(runs[TODAY]) - tolerance
    ok = [name for name in runs if score(runs[name]) >= floor]
    return min(ok, key=lambda name: (mean(pairs(runs[name])), list(runs).index(name)))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=Path, default=Path("runs/quickstart/models"))
    p.add_argument("--work-dir", type=Path, default=Path("runs/bench_pair_cost"))
    p.add_argument("--questions", type=int, default=150, help="questions per toy world")
    p.add_argument("--tolerance", type=float, default=1.0, help="score points below today's allowed")
    p.add_argument("--time-sample", type=int, default=64, help="questions timed per setting (0: none)")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--out", type=Path, help="also write the report here (Markdown)")
    args = p.parse_args(argv)
    if args.questions < 1 or args.tolerance < 0 or args.time_sample < 0:
        p.error("--questions must be >= 1, --tolerance and --time-sample >= 0")
    for kind in ("labeler", "filter"):
        if not (args.models / kind / "best" / "model.safetensors").is_file():
            p.error(f"{args.models / kind / 'best'}: no trained model (run `efficientrag quickstart`)")
    return args


def timed(
    settings: dict[str, EfficientRAGConfig], search: Any, examples: list, quantize: str
) -> dict[str, float]:
    from efficientrag.models import Filter, Labeler
    from efficientrag.pipeline.efficientrag import EfficientRAG

    base = settings[TODAY]
    models = (
        Labeler.from_pretrained(base.labeler, device="cpu").quantize(quantize),
        Filter.from_pretrained(base.filter, device="cpu").quantize(quantize),
    )

    def method(cfg: EfficientRAGConfig) -> Any:
        rag = EfficientRAG(search, *models, replace(cfg, device="cpu"))
        return lambda batch: rag.retrieve_batch([ex.question for ex in batch])

    return time_methods({name: method(cfg) for name, cfg in settings.items()}, examples)


def main(argv: list[str] | None = None) -> int:
    from efficientrag.models.export import resolve_quantize

    args = parse_args(argv)
    labeler, filter_ = args.models / "labeler" / "best", args.models / "filter" / "best"
    base = EfficientRAGConfig(labeler=str(labeler), filter=str(filter_))
    settings = {name: replace(base, **changes) for name, changes in CANDIDATES.items()}
    runs: dict[str, dict[str, list[Record]]] = {}
    for world, seed in (("validation", 1), ("report", 2)):
        examples, search = toy_world_search(seed, args.questions, args.work_dir)
        runs[world] = {
            name: loop_run(cfg, search, examples, args.work_dir / world / _slug(name))
            for name, cfg in settings.items()
        }
    chosen = choose(runs["validation"], args.tolerance)
    seconds = {}
    if args.time_sample:
        dtypes = ["none"] + (["bf16"] if resolve_quantize("auto", "cpu") == "bf16" else [])
        for dtype in dtypes:
            seconds[dtype] = timed(settings, search, examples[: args.time_sample], dtype)
    text = "\n".join(render(args, runs, chosen, seconds, labeler, filter_))
    publish(text, args.out)
    return 0


def render(
    args: argparse.Namespace,
    runs: dict[str, dict[str, list[Record]]],
    chosen: str,
    seconds: dict[str, dict[str, float]],
    labeler: Path,
    filter_: Path,
) -> list[str]:
    val, rep = runs["validation"], runs["report"]
    dtypes = list(seconds)
    lines = [
        *title_block(
            f"# Fewer Labeler pairs (toy worlds, seeds 1 / 2, {args.questions} questions each)", __file__
        ),
        f"Models: Labeler {folder_digest(str(labeler))[:12]}, Filter {folder_digest(str(filter_))[:12]} "
        f"({args.models}). Chosen on the validation world: **{chosen}** (the fewest pairs within "
        f"{args.tolerance:g} point of today's score {score(val[TODAY]):.2f}; each candidate's: "
        + ", ".join(f"{n} {score(r):.2f} at {mean(pairs(r)):.1f} pairs" for n, r in val.items())
        + "). Nothing was chosen on the report world.",
        "",
        "| setting (report world) | recall / all-gold | chunks | pairs / q (median) | "
        + "".join(f"s / q, {'bf16' if d == 'bf16' else 'float32'} | " for d in dtypes)
        + "vs today: recall [95%] | all-gold [95%] |",
        "|---|---|---|---|" + "---|" * len(dtypes) + "---|---|",
    ]
    ref = question_scores(rep[TODAY])
    for name, recs in rep.items():
        s = question_scores(recs)
        rec, full = mean([x for x, _ in s]), mean([y for _, y in s])
        chunks = mean([len(r["retrieved_ids"]) for r in recs])
        p = pairs(recs)
        times = "".join(f"{seconds[d][name]:.3f} | " for d in dtypes)
        gaps = ["", ""]
        if name != TODAY:
            gaps = [paired_bootstrap([x for x, _ in s], [x for x, _ in ref], resamples=args.resamples).cell()]
            gaps.append(
                paired_bootstrap([y for _, y in s], [y for _, y in ref], resamples=args.resamples).cell()
            )
        mark = "**" if name == chosen else ""
        lines.append(
            f"| {mark}{name}{mark} | {rec:.1f} / {full:.1f} | {chunks:.2f} | {mean(p):.1f} "
            f"({statistics.median(p):.0f}) | {times}{gaps[0]} | {gaps[1]} |"
        )
    return lines


def _slug(name: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in name).split())


if __name__ == "__main__":
    sys.exit(main_reporting_interrupts(main))
