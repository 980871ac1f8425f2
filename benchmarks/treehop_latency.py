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
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from report_output import publish
from retrieval_efficientrag import DATASETS, DEFAULT_SHARED, DEV_FILES, REPO, open_pool

from efficientrag.pipeline.trace import stage_seconds

TREEHOP = {"TreeHop@5, 2 hops": (5, 2), "TreeHop@5, 3 hops": (5, 3), "TreeHop@10, 2 hops": (10, 2)}
TREEHOP["TreeHop@10, 3 hops"] = (10, 3)
TRAINED_ON = "hotpotqa+2wikimultihopqa+musique"
SPLIT = ("encode", "search", "model")


class DirectR:
    """Direct-R@k with the encode/search split the dense retriever reports."""

    def __init__(self, retriever: Any, k: int) -> None:
        self.retriever, self.k = retriever, k

    def run(self, questions: list[str]) -> tuple[list[list[str]], dict[str, float]]:
        hits = self.retriever.search(questions, self.k)
        t = self.retriever.last_timings
        return [[h.id for h in hs] for hs in hits], {
            "encode": t["encode"],
            "search": t["search"],
            "model": 0.0,
        }


class EfficientRAGRun:
    def __init__(self, rag: Any) -> None:
        self.rag = rag

    def run(self, questions: list[str]) -> tuple[list[list[str]], dict[str, float]]:
        results = self.rag.retrieve_batch(questions)
        seconds = stage_seconds([r.trace for r in results])
        split = {
            "encode": seconds["encode"],
            "search": seconds["search"],
            "model": seconds["labeler"] + seconds["filter"],
        }
        return [r.chunk_ids for r in results], split


class TreeHopRun:
    def __init__(self, search: Any) -> None:
        self.search = search

    def run(self, questions: list[str]) -> tuple[list[list[str]], dict[str, float]]:
        results = self.search.retrieve_batch(questions)
        split = dict.fromkeys(SPLIT, 0.0)
        for res in results:
            for key in SPLIT:
                split[key] += res.counters[f"time_{key}_s"]
        return [r.chunk_ids for r in results], split


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
    out: dict[str, Any] = {"Direct-R@10": DirectR(pool.retriever, 10)}
    out[f"EfficientRAG ({label})"] = EfficientRAGRun(EfficientRAG.from_config(pool.retriever, rag_cfg))
    for name, (k, hops) in TREEHOP.items():
        out[name] = TreeHopRun(
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
        out[f"TreeHop@{k}, {hops} hops + Tagger"] = TreeHopRun(TaggedTreeHop(search, labeler, settings))
    return out


def measure(runs: dict[str, Any], examples: list, slice_size: int) -> dict[str, dict[str, Any]]:
    from efficientrag.retrieval.metrics import score_retrieval

    stats = {name: {"wall": 0.0, **dict.fromkeys(SPLIT, 0.0), "scores": []} for name in runs}
    names = list(runs)
    slices = [examples[i : i + slice_size] for i in range(0, len(examples), slice_size)]
    for n, part in enumerate(slices):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            t0 = time.perf_counter()
            ids, split = runs[name].run([ex.question for ex in part])
            stats[name]["wall"] += time.perf_counter() - t0
            for key in SPLIT:
                stats[name][key] += split[key]
            for ex, got in zip(part, ids, strict=True):
                # Answer recall is not reported here (the evaluation tables have it).
                stats[name]["scores"].append(score_retrieval(got, [], ex.gold_chunk_ids, ex.answers))
    return stats


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
            other = s["wall"] - sum(s[k] for k in SPLIT)
            lines.append(
                f"| {name} | {mode} | {n} | {s['wall'] / n:.4f} | "
                + " | ".join(f"{s[k] / n:.4f}" for k in SPLIT)
                + f" | {other / n:.4f} | {s['wall'] / ref['wall']:.4f} | {m['num_chunks']:.2f} | "
                f"{m['recall']:.2f} | {m['all_gold']:.2f} |"
            )
    return lines


def points(stats: dict[str, dict[str, Any]]) -> dict[str, tuple[float, float, float]]:
    """Per method: (seconds per question, recall, chunks per question)."""
    from efficientrag.retrieval.metrics import mean_scores

    out = {}
    for name, s in stats.items():
        m = mean_scores(s["scores"])
        out[name] = (s["wall"] / len(s["scores"]), m["recall"], m["num_chunks"])
    return out


def plot(pts: dict[str, tuple[float, float, float]], path: Path, title: str, threads: int) -> Path:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    for i, (name, (x, recall, chunks)) in enumerate(pts.items()):
        ax.scatter([x], [recall], s=44, marker="osD^v<>P"[i % 8], label=f"{name} ({chunks:.1f} chunks)")
    ax.set_xscale("log")
    ax.set_xlabel(f"seconds per question (log scale; {threads} CPU threads)")
    ax.set_ylabel("oracle-chunk recall (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    # Below the axes: inside, it hid a point whichever corner it took.
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared-data", default=str(DEFAULT_SHARED))
    parser.add_argument("--work-dir", default=str(REPO / "runs" / "bench_protocol"))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--limit", type=int, default=0, help="first N dev questions per dataset (0: all)")
    parser.add_argument("--slice", type=int, default=32, help="questions per slice in batch mode")
    parser.add_argument("--single", type=int, default=30, help="questions per dataset run one at a time")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: every core)")
    parser.add_argument("--out", default=str(REPO / "runs" / "treehop_latency"))
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    args.retriever = "dense"

    import faiss
    import torch

    from efficientrag.cpu import available_cores

    threads = args.threads or available_cores()
    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)
    by_mode: dict[str, dict[str, dict[str, Any]]] = {"batch": {}, "single": {}}
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        pool = open_pool(
            f"dev-{name}", [(name, DEV_FILES[name])], Path(args.work_dir) / "dense" / "pools", args
        )
        examples = pool.examples[: args.limit or None]
        runs = methods(pool, args)
        for mode, exs, size in (("batch", examples, args.slice), ("single", examples[: args.single], 1)):
            for method, s in measure(runs, exs, size).items():
                merged = by_mode[mode].setdefault(method, s)
                if merged is not s:
                    for key in ("wall", *SPLIT):
                        merged[key] += s[key]
                    merged["scores"] += s["scores"]
        if not args.quiet:
            print(f"{name}: {len(examples)} questions measured", file=sys.stderr)
    out = Path(args.out)
    png = plot(
        points(by_mode["batch"]),
        out / "recall_vs_seconds.png",
        "recall vs seconds per question (dev, batch mode)",
        threads,
    )
    cmd = "python benchmarks/treehop_latency.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    lines = [
        f"Seconds per question on {args.datasets} dev questions, {threads} torch/FAISS threads, one run "
        "(slices rotate over the methods).",
        "",
        *table(by_mode, "EfficientRAG"),
        "",
        f"Rerun: `{cmd.strip()}`",
        "",
        f"![recall vs seconds]({png})",
    ]
    publish("\n".join(lines), out / "latency.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
