"""Seconds per question of Direct-R, EfficientRAG and TreeHop, side by side in one run, with the
cost split into query encoding, index search and model (TreeHop's network; EfficientRAG's Labeler
and Filter), on the same dev questions, dense index (MiniLM + FAISS Flat), machine and threads.

The questions are cut into slices; every method runs each slice in turn and the order rotates from
slice to slice, so a background load slows all methods alike. Two modes:

* ``batch``: slices of ``--slice`` questions handed to each method at once (how the evaluation runs
  them: one encoder call, one search and one network or Labeler call per hop for the whole slice);
* ``single``: one question at a time (the first ``--single`` questions of each dataset): the
  latency a user waiting on one question sees, as the TreeHop paper reports it.

Models: TreeHop from ``benchmarks/retrieval_treehop.py`` and EfficientRAG's Labeler/Filter and
setting from ``benchmarks/retrieval_efficientrag.py --retriever dense`` (both trained on the three
train files, settings chosen on their validation questions), and the TreeHop + Tagger combination
when that benchmark chose one. Writes a table and a plot of recall
against seconds per question (``--out``).

    python benchmarks/treehop_latency.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from report_output import command_line
from retrieval_efficientrag import DEV_FILES, REPO, ProtocolOptions, open_pool
from timed_methods import CountedRun, DirectRun, LoopRun, latency_parser, measure_modes, publish_timings

TREEHOP = {"TreeHop@5, 2 hops": (5, 2), "TreeHop@5, 3 hops": (5, 3), "TreeHop@10, 2 hops": (10, 2)}
TREEHOP["TreeHop@10, 3 hops"] = (10, 3)
TRAINED_ON = "hotpotqa+2wikimultihopqa+musique"
# The table's columns: the model is TreeHop's network or EfficientRAG's Labeler and Filter.
COLUMNS = ("encode", "search", "model")


def methods(pool: Any, args: argparse.Namespace) -> dict[str, Any]:
    from efficientrag.config import load_config
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.treehop.config import TreeHopRetrievalConfig
    from efficientrag.treehop.model import TreeHop
    from efficientrag.treehop.retriever import TreeHopRetriever

    work = Path(args.work_dir) / "dense"
    models = work / "models" / TRAINED_ON
    results = sorted(models.glob("results-*.json"))
    if not results:
        raise SystemExit(
            f"no EfficientRAG results under {models}: run retrieval_efficientrag.py --retriever dense"
        )
    label, overrides = json.loads(results[0].read_text(encoding="utf-8"))["setting"]
    rag_cfg = load_config(
        EfficientRAGConfig,
        None,
        [
            *overrides,
            f"labeler={models / 'labeler' / 'best'}",
            f"filter={models / 'filter' / 'best'}",
            "device=cpu",
        ],
    )
    chosen = sorted((work / "treehop" / TRAINED_ON).glob("results-*.json"))
    if not chosen:
        raise SystemExit(
            f"no TreeHop results under {work / 'treehop' / TRAINED_ON}: run retrieval_treehop.py first"
        )
    treehop_results = json.loads(chosen[0].read_text(encoding="utf-8"))
    treehop = TreeHop.from_pretrained(treehop_results["model"], device="cpu")
    out: dict[str, Any] = {"Direct-R@10": DirectRun(pool.retriever, 10)}
    out[f"EfficientRAG ({label})"] = LoopRun(EfficientRAG.from_config(pool.retriever, rag_cfg))
    for name, (k, hops) in TREEHOP.items():
        out[name] = CountedRun(
            TreeHopRetriever(pool.retriever, treehop, TreeHopRetrievalConfig(top_k=k, hops=hops))
        )
    combo = (treehop_results.get("combination") or {}).get("setting")
    if combo:
        from efficientrag.models import Labeler
        from efficientrag.treehop.tagged import TaggedTreeHop, TagSettings

        k, hops, threshold, floor = combo
        search = TreeHopRetriever(pool.retriever, treehop, TreeHopRetrievalConfig(top_k=k, hops=hops))
        labeler = Labeler.from_pretrained(models / "labeler" / "best", device="cpu")
        settings = TagSettings(tag_threshold=threshold, floor_k=floor, chunk_budget=7)
        out[f"TreeHop@{k}, {hops} hops + Tagger"] = CountedRun(TaggedTreeHop(search, labeler, settings))
    return out


def columns(stats: dict[str, Any]) -> dict[str, float]:
    """A run's seconds in the table's columns: the Labeler and Filter count as the model."""
    return {
        "encode": stats["encode"],
        "search": stats["search"],
        "model": stats["model"] + stats["labeler"] + stats["filter"],
    }


def table(stats_by_mode: dict[str, dict[str, dict[str, Any]]], reference: str) -> list[str]:
    from efficientrag.retrieval.metrics import mean_scores

    lines = [
        "| method | mode | questions | s / question | encode | search | model | other | x EfficientRAG | "
        "chunks / q | recall | all-gold |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, stats in stats_by_mode.items():
        ref = stats[next(n for n in stats if n.startswith(reference))]
        for name, s in stats.items():
            n = len(s["scores"])
            m = mean_scores(s["scores"])
            cells = columns(s)
            other = s["wall"] - sum(cells.values())
            lines.append(
                f"| {name} | {mode} | {n} | {s['wall'] / n:.4f} | "
                + " | ".join(f"{cells[k] / n:.4f}" for k in COLUMNS)
                + f" | {other / n:.4f} | {s['wall'] / ref['wall']:.4f} | {m['num_chunks']:.2f} | "
                f"{m['recall']:.2f} | {m['all_gold']:.2f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = latency_parser(__doc__)
    parser.add_argument("--out", default=str(REPO / "runs" / "treehop_latency"))
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    import faiss
    import torch

    from efficientrag.cpu import available_cores

    threads = args.threads or available_cores()
    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)
    by_mode: dict[str, dict[str, dict[str, Any]]] = {"batch": {}, "single": {}}
    opts = ProtocolOptions.from_args(args, retriever="dense")
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        pool = open_pool(
            f"dev-{name}", [(name, DEV_FILES[name])], Path(args.work_dir) / "dense" / "pools", opts
        )
        examples = pool.examples[: args.limit or None]
        runs = methods(pool, args)
        measure_modes(by_mode, runs, examples, args)
        if not args.quiet:
            print(f"{name}: {len(examples)} questions measured", file=sys.stderr)
    intro = (
        f"Seconds per question on {args.datasets} dev questions, {threads} torch/FAISS threads, one run "
        "(slices rotate over the methods)."
    )
    rows = table(by_mode, "EfficientRAG")
    publish_timings(intro, rows, by_mode, Path(args.out), "latency.md", command_line(__file__, argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
