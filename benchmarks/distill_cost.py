"""The cost of distilled Labelers beside their teachers, TreeHop and Direct-R, in one run.

Variants on the same dev questions, index, machine and threads: the teachers in float32 and bf16,
the chosen student (``benchmarks/distill.py``) in float32 and bf16, and the student in bf16 with
Labeler inputs cut to ``--len`` tokens; Direct-R at several k; TreeHop (when
``benchmarks/retrieval_treehop.py`` trained one; TreeHop updates query vectors, so it searches a
dense index of the same dev pool, said in its row, when ``--retriever`` is not dense). Each is timed in two
modes, as ``benchmarks/treehop_latency.py`` does (slices rotate over the variants, so a background
load slows all alike):

* ``batch``: ``--slice`` questions at once (how an evaluation runs them);
* ``single``: one question at a time (the first ``--single`` of each dataset).

Per question: wall seconds, split into query encoding, index search, Labeler, Filter and TreeHop's
network; recall, all-gold and chunks beside each. Writes ``cost.md`` and the plot of recall against
seconds per question (``recall_vs_seconds.png``) under ``--out``.

    python benchmarks/distill_cost.py --retriever dense
    python benchmarks/distill_cost.py --retriever bm25 --variants teacher teacher-bf16 student-bf16
    python benchmarks/distill_cost.py --retriever bm25 --limit 100   # first 100 dev questions a dataset

bf16 is fast only where the CPU has bfloat16 kernels (AVX512-BF16/AMX); the table says whether it has.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from report_output import command_line
from retrieval_efficientrag import DATASETS, DEV_FILES, REPO, ProtocolOptions, open_pool
from timed_methods import (
    SPLIT,
    CountedRun,
    DirectRun,
    LoopRun,
    latency_parser,
    measure_modes,
    publish_timings,
)
from treehop_latency import TREEHOP

VARIANTS = ("teacher", "teacher-bf16", "student", "student-bf16", "student-bf16+len")
DIRECT_KS = (2, 4, 7, 10)


def variant_overrides(name: str, chosen: dict[str, Any], length: int) -> list[str]:
    """EfficientRAG overrides of a variant: whose models, at whose chosen setting, which dtype."""
    who, _, rest = name.partition("-")
    if who not in ("teacher", "student") or rest not in ("", "bf16", "bf16+len"):
        raise SystemExit(f"unknown variant {name!r}: one of {', '.join(VARIANTS)}")
    label, overrides = chosen[f"{who}_setting"]
    models = chosen["teacher"] if who == "teacher" else chosen["student"]
    out = [*overrides, f"labeler={models['labeler']}", f"filter={models['filter']}", "device=cpu"]
    if rest.startswith("bf16"):
        out.append("quantize=bf16")
    if rest.endswith("+len"):
        out.append(f"labeler_max_length={length}")
    return out


def runs_for(
    pool: Any, args: argparse.Namespace, chosen: dict[str, Any], treehop: Any = None, dense: Any = None
) -> dict[str, Any]:
    """Every timed run on one dev pool: Direct-R at each k, the EfficientRAG variants and, given a
    TreeHop model and a dense index of the same pool (``dense``: its retriever), TreeHop's settings."""
    from efficientrag.config import load_config
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG

    runs: dict[str, Any] = {f"Direct-R@{k}": DirectRun(pool.retriever, k) for k in args.direct_ks}
    for name in args.variants:
        cfg = load_config(EfficientRAGConfig, None, variant_overrides(name, chosen, args.len))
        runs[f"EfficientRAG {name}"] = LoopRun(EfficientRAG.from_config(pool.retriever, cfg))
    if treehop is not None:
        from efficientrag.treehop.config import TreeHopRetrievalConfig
        from efficientrag.treehop.retriever import TreeHopRetriever

        where = "" if dense is pool.retriever else " (dense index)"
        for name, (k, hops) in TREEHOP.items():
            runs[name + where] = CountedRun(
                TreeHopRetriever(dense, treehop, TreeHopRetrievalConfig(top_k=k, hops=hops))
            )
    return runs


def treehop_model(args: argparse.Namespace) -> Any:
    """The TreeHop model ``retrieval_treehop.py`` trained (over the dense index: TreeHop updates
    query vectors, so it needs one), or None (said on stderr)."""
    trained_on = "+".join(d for d in args.train_on.split(",") if d)
    found = sorted((Path(args.work_dir) / "dense" / "treehop" / trained_on).glob("results-*.json"))
    if not found:
        print("no TreeHop model (run benchmarks/retrieval_treehop.py): TreeHop left out", file=sys.stderr)
        return None
    from efficientrag.treehop.model import TreeHop

    return TreeHop.from_pretrained(json.loads(found[0].read_text(encoding="utf-8"))["model"], device="cpu")


def table(by_mode: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    from efficientrag.retrieval.metrics import mean_scores

    lines = [
        "| method | mode | questions | s / question | encode | search | Labeler | Filter | TreeHop net "
        "| x teacher | chunks | recall | all-gold |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, stats in by_mode.items():
        ref = stats.get("EfficientRAG teacher")
        for name, s in stats.items():
            n, m = len(s["scores"]), mean_scores(s["scores"])
            times = " | ".join(f"{s[k] / n:.4f}" for k in SPLIT)
            ratio = f"{s['wall'] / ref['wall']:.3f}" if ref else "-"
            lines.append(
                f"| {name} | {mode} | {n} | {s['wall'] / n:.4f} | {times} | {ratio} | {m['num_chunks']:.2f} "
                f"| {m['recall']:.2f} | {m['all_gold']:.2f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = latency_parser(__doc__)
    parser.add_argument("--retriever", choices=("dense", "bm25", "hybrid"), default="dense")
    parser.add_argument(
        "--results", default="", help="benchmarks/distill.py results.json (default: its place)"
    )
    parser.add_argument("--train-on", default=",".join(DATASETS), help="the teachers' training files")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--len", type=int, default=128, help="Labeler tokens of the +len variant")
    parser.add_argument("--direct-ks", type=int, nargs="+", default=list(DIRECT_KS))
    parser.add_argument("--out", default=str(REPO / "runs" / "distill_cost"))
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    import torch

    from efficientrag.cpu import available_cores
    from efficientrag.models.export import cpu_has_bf16_kernels

    threads = args.threads or available_cores()
    torch.set_num_threads(threads)
    work = Path(args.work_dir) / args.retriever
    trained_on = "+".join(d for d in args.train_on.split(",") if d)
    path = Path(args.results) if args.results else work / "models" / trained_on / "distill" / "results.json"
    if not path.is_file():
        raise SystemExit(
            f"{path}: no distillation results (run benchmarks/distill.py --retriever {args.retriever})"
        )
    chosen = json.loads(path.read_text(encoding="utf-8"))
    chosen["teacher"] = {k: str(path.parents[1] / k / "best") for k in ("labeler", "filter")}
    by_mode: dict[str, dict[str, dict[str, Any]]] = {"batch": {}, "single": {}}
    treehop = treehop_model(args)
    opts = ProtocolOptions.from_args(args)
    for name in [d for d in args.datasets.split(",") if d]:
        pool = open_pool(f"dev-{name}", [(name, DEV_FILES[name])], work / "pools", opts)
        examples = pool.examples[: args.limit or None]
        dense = pool.retriever
        if treehop is not None and args.retriever != "dense":  # the same questions and chunks, a dense index
            dense_root = Path(args.work_dir) / "dense" / "pools"
            dense_opts = replace(opts, retriever="dense")
            dense = open_pool(f"dev-{name}", [(name, DEV_FILES[name])], dense_root, dense_opts).retriever
        runs = runs_for(pool, args, chosen, treehop, dense)
        measure_modes(by_mode, runs, examples, args)
    intro = (
        f"Seconds per question on {args.datasets} dev questions, {args.retriever}, {threads} torch threads, "
        f"bfloat16 kernels: {'yes' if cpu_has_bf16_kernels() else 'no'}; chosen student {chosen['chosen']}, "
        f"setting {chosen['student_setting'][0]} (teachers {chosen['teacher_setting'][0]})."
    )
    publish_timings(intro, table(by_mode), by_mode, Path(args.out), "cost.md", command_line(__file__, argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
