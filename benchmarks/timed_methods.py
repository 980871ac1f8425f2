"""Methods timed side by side in one run: each wraps a retriever so that a call on a slice of
questions returns its chunk ids and its seconds split by stage, and :func:`measure` hands every
slice to every method, the order rotating from slice to slice so that a background load slows all
alike. A public interface for the latency scripts beside it (``treehop_latency.py``,
``distill_cost.py``)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

# Query encoding, index search, the Labeler, the Filter and a search's own network (TreeHop's).
SPLIT = ("encode", "search", "labeler", "filter", "model")


class DirectRun:
    """Direct-R@k: one search, no model; encode and search seconds as the retriever reports them.

    Args:
        retriever: A retriever (its ``last_timings``, where it keeps them, give the split).
        k: Chunks per question.
    """

    def __init__(self, retriever: Any, k: int) -> None:
        self.retriever, self.k = retriever, k

    def run(self, questions: list[str]) -> tuple[list[list[str]], dict[str, float]]:
        hits = self.retriever.search(questions, self.k)
        timings = getattr(self.retriever, "last_timings", {})
        split = dict.fromkeys(SPLIT, 0.0) | {k: timings.get(k, 0.0) for k in ("encode", "search")}
        return [[h.id for h in hs] for hs in hits], split


class LoopRun:
    """EfficientRAG's loop, its seconds read from every hop's timing record.

    Args:
        rag: An ``EfficientRAG``.
    """

    def __init__(self, rag: Any) -> None:
        self.rag = rag

    def run(self, questions: list[str]) -> tuple[list[list[str]], dict[str, float]]:
        from efficientrag.pipeline.trace import stage_seconds

        results = self.rag.retrieve_batch(questions)
        seconds = stage_seconds([r.trace for r in results])
        split = dict.fromkeys(SPLIT, 0.0) | {k: seconds[k] for k in ("encode", "search", "labeler", "filter")}
        return [r.chunk_ids for r in results], split


class CountedRun:
    """A search that counts its own seconds (``time_encode_s``, ``time_search_s``, ``time_model_s``
    in each result's counters): TreeHop, alone or with the Tagger.

    Args:
        search: Anything with ``retrieve_batch`` returning such results.
    """

    def __init__(self, search: Any) -> None:
        self.search = search

    def run(self, questions: list[str]) -> tuple[list[list[str]], dict[str, float]]:
        results = self.search.retrieve_batch(questions)
        split = dict.fromkeys(SPLIT, 0.0)
        for res in results:
            for key in ("encode", "search", "model"):
                split[key] += res.counters[f"time_{key}_s"]
        return [r.chunk_ids for r in results], split


def measure(runs: dict[str, Any], examples: list, size: int) -> dict[str, dict[str, Any]]:
    """Every run on every slice of ``size`` questions, the order rotating from slice to slice.

    Args:
        runs: Name to a timed method (``run(questions) -> (ids, split)``).
        examples: The questions, with their gold chunks.
        size: Questions per slice (1: one at a time).

    Returns:
        Per run: ``wall`` seconds, seconds per stage of :data:`SPLIT`, and per-question ``scores``.
    """
    from efficientrag.retrieval.metrics import score_retrieval

    stats = {name: {"wall": 0.0, **dict.fromkeys(SPLIT, 0.0), "scores": []} for name in runs}
    names = list(runs)
    for n, start in enumerate(range(0, len(examples), size)):
        part = examples[start : start + size]
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


def latency_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options every latency script shares: the dev files and work folder of the honest
    protocol, which dev sets, how many questions, in what slices, on how many threads.

    Args:
        doc: The script's description (its docstring).
    """
    from retrieval_efficientrag import DATASETS, DEFAULT_SHARED, REPO

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared-data", default=str(DEFAULT_SHARED))
    parser.add_argument("--work-dir", default=str(REPO / "runs" / "bench_protocol"))
    parser.add_argument("--datasets", default=",".join(DATASETS), help="dev sets to time")
    parser.add_argument("--limit", type=int, default=0, help="first N dev questions per dataset (0: all)")
    parser.add_argument("--slice", type=int, default=32, help="questions per slice in batch mode")
    parser.add_argument("--single", type=int, default=30, help="questions per dataset run one at a time")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: every core)")
    return parser


def measure_modes(
    by_mode: dict[str, dict[str, dict[str, Any]]],
    runs: dict[str, Any],
    examples: list,
    args: argparse.Namespace,
) -> None:
    """Both modes on one dataset's questions, added to ``by_mode``: ``batch`` (slices of
    ``args.slice``, how an evaluation runs them) and ``single`` (the first ``args.single``
    questions one at a time, the latency a user waiting on one question sees).

    Args:
        by_mode: Totals per mode (changed in place; missing modes are added).
        runs: Name to a timed method.
        examples: The dataset's questions.
        args: The script's arguments (:func:`latency_parser`'s options).
    """
    for mode, exs, size in (("batch", examples, args.slice), ("single", examples[: args.single], 1)):
        merge(by_mode.setdefault(mode, {}), measure(runs, exs, size))


def merge(into: dict[str, dict[str, Any]], stats: dict[str, dict[str, Any]]) -> None:
    """Add one dataset's :func:`measure` to the totals so far, run by run.

    Args:
        into: The totals (changed in place).
        stats: One call's result.
    """
    for method, s in stats.items():
        merged = into.setdefault(method, s)
        if merged is not s:
            for key in ("wall", *SPLIT):
                merged[key] += s[key]
            merged["scores"] += s["scores"]


def points(stats: dict[str, dict[str, Any]]) -> dict[str, tuple[float, float, float]]:
    """Per run: (seconds per question, recall, chunks per question).

    Args:
        stats: :func:`measure`'s (or merged) result.
    """
    from efficientrag.retrieval.metrics import mean_scores

    out = {}
    for name, s in stats.items():
        m = mean_scores(s["scores"])
        out[name] = (s["wall"] / len(s["scores"]), m["recall"], m["num_chunks"])
    return out


def torch_threads() -> int:
    """The threads torch computes with in this process (the scripts set it before timing)."""
    import torch

    return torch.get_num_threads()


def plot(pts: dict[str, tuple[float, float, float]], path: Path, title: str) -> Path:
    """Recall against seconds per question (log scale), one marker a run, saved at ``path``.

    Args:
        pts: :func:`points`' result.
        path: The PNG to write.
        title: The plot's title.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    for i, (name, (x, recall, chunks)) in enumerate(pts.items()):
        ax.scatter([x], [recall], s=44, marker="osD^v<>P"[i % 8], label=f"{name} ({chunks:.1f} chunks)")
    ax.set_xscale("log")
    ax.set_xlabel(f"seconds per question (log scale; {torch_threads()} CPU threads)")
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


def publish_timings(intro: str, rows: list[str], by_mode: dict, out: Path, name: str, command: str) -> None:
    """The report of a latency script: its intro, its table, the command that reruns it and the plot
    of recall against seconds (batch mode), printed and written to ``out / name``.

    Args:
        intro: The sentence that says what was timed, where.
        rows: The table's lines.
        by_mode: The totals per mode (the plot reads ``batch``).
        out: The folder for the report and the plot.
        name: The report's file name.
        command: The command line that made it.
    """
    from report_output import publish

    png = plot(
        points(by_mode["batch"]), out / "recall_vs_seconds.png", "recall vs seconds per question (batch)"
    )
    lines = [intro, "", *rows, "", f"Rerun: `{command}`", "", f"![recall vs seconds]({png})"]
    publish("\n".join(lines), out / name)
