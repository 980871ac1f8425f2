"""The same work on every search backend, and how each backend's cost grows with the corpus.

Part 1: the shared HotpotQA dev sample (350 questions over its pooled corpus) through bm25s, Milvus
Lite BM25, FAISS Flat and Milvus Lite dense (FLAT, inner product), side by side in one run: Direct-R@10
and EfficientRAG (recall, all-gold rate, chunks, seconds per question) with the same Labeler/Filter
and the same setting on every backend, and how many questions got exactly the same chunks on
Milvus as on the in-process backend of the same kind.

Part 2: corpus size against index build time, peak RSS, ms per query (a batch of 100) and the 350
questions' R@10, each (backend, size) in its own process (benchmarks/backend_scale.py).

    python benchmarks/retrieval_backends.py --models runs/bench_backends/train1/models/hotpotqa
    python benchmarks/retrieval_backends.py --models DIR --sizes 10000 30000 100000 --dense-max 30000
    python benchmarks/retrieval_backends.py --skip-part1 --sizes 10000   # scale part only

``--models``: a folder with ``labeler/best`` and ``filter/best`` (e.g. what
benchmarks/retrieval_efficientrag.py trains); ``--setting`` a YAML with an ``efficientrag:``
section (default: configs/efficientrag/bm25-chosen.yaml, chosen on validation questions of the
training files, never on these dev questions). Everything is cached under ``--work-dir``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import backend_scale
import retrieval_efficientrag

REPO = Path(__file__).resolve().parents[1]
PART1 = ("bm25s", "milvus-bm25", "faiss-flat", "milvus-dense")
# Milvus backend -> the in-process backend of the same kind, whose chunks it is compared with.
TWINS = {"milvus-bm25": "bm25s", "milvus-dense": "faiss-flat"}


def part1_config(backend: str, index_dir: Path) -> Any:
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.retrieval.milvus.config import MilvusConfig

    if backend == "bm25s":
        return RetrieverConfig(kind="bm25", index_dir=str(index_dir))
    if backend == "faiss-flat":
        return RetrieverConfig(kind="dense", index_dir=str(index_dir))
    search = "bm25" if backend == "milvus-bm25" else "dense"
    return RetrieverConfig(
        kind="milvus", milvus=MilvusConfig(uri=str(index_dir / "milvus.db"), search=search)
    )


def run_part1(args: argparse.Namespace, work: Path, models: Path) -> list[dict[str, Any]]:
    from efficientrag.baselines.base import SharedSettings
    from efficientrag.baselines.direct_r import DirectRetrieval
    from efficientrag.baselines.efficientrag import EfficientRAGRetrieval
    from efficientrag.config import load_config
    from efficientrag.data.config import DataConfig
    from efficientrag.eval.runner import run_method
    from efficientrag.experiment.config import ExperimentConfig
    from efficientrag.experiment.prepared_data import prepare_data
    from efficientrag.jsonl import read_jsonl
    from efficientrag.models import Filter, Labeler
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.retrieval.encoder import Encoder
    from efficientrag.retrieval.factory import build_retriever

    data = DataConfig(dataset="hotpotqa", path=str(Path(args.shared_data) / args.dev_file))
    pooled = prepare_data(ExperimentConfig(work_dir=str(work / "pool"), data=data))
    examples = pooled.examples[: args.limit] if args.limit else pooled.examples
    rag_cfg = load_config(ExperimentConfig, args.setting).efficientrag
    labeler = Labeler.from_pretrained(models / "labeler" / "best")
    filt = Filter.from_pretrained(models / "filter" / "best")
    encoder = Encoder(show_progress=False)
    rows = []
    for backend in PART1:
        cfg = part1_config(backend, work / "index" / backend)
        t0 = time.perf_counter()
        retriever = build_retriever(
            cfg, pooled.corpus, cfg.index_dir, encoder=encoder, show_progress=not args.quiet
        )
        build_s = time.perf_counter() - t0
        out = work / "part1" / backend
        direct = run_method(
            DirectRetrieval(retriever, None, shared=SharedSettings(ks=(10,))),
            examples,
            out / "direct_r",
            ks=(10,),
            resume=False,
            progress=False,
        )
        t0 = time.perf_counter()
        eff = run_method(
            EfficientRAGRetrieval(None, None, rag=EfficientRAG(retriever, labeler, filt, rag_cfg)),
            examples, out / "efficientrag", ks=(), resume=False, progress=not args.quiet,
        )  # fmt: skip
        seconds = time.perf_counter() - t0
        records = list(read_jsonl(out / "efficientrag" / "predictions.jsonl"))
        chunks = {r["id"]: r["retrieved_ids"] for r in records}
        rows.append(
            {
                "backend": backend,
                "n": eff["n"],
                "open_or_build_s": build_s,
                "direct_r10": direct["retrieval"]["10"]["recall"],
                "recall": eff["retrieval"]["all"]["recall"],
                "all_gold": eff["retrieval"]["all"]["all_gold"],
                "chunks": eff["retrieval"]["all"]["num_chunks"],
                "s_per_question": seconds / max(1, eff["n"]),
                # The backend's own share (query encoding + search), which other load on the machine
                # moves far less than the Labeler's.
                "search_s_per_question": search_seconds(records),
                "chunk_ids": chunks,
            }
        )
    by = {r["backend"]: r for r in rows}
    for mine, twin in TWINS.items():
        a, b = by[mine]["chunk_ids"], by[twin]["chunk_ids"]
        # The chunk set is what recall scores; the order differs with tied scores.
        by[mine]["same_chunks_as"] = (twin, sum(set(a[q]) == set(b.get(q, ())) for q in a), len(a))
    return rows


def train_models(args: argparse.Namespace, root: Path) -> Path:
    """One Labeler/Filter pair from the HotpotQA train file (none of its questions is a dev
    question), through benchmarks/retrieval_efficientrag.py's steps; cached under ``root``."""
    opts = retrieval_efficientrag.ProtocolOptions(
        shared_data=args.shared_data, retriever="bm25", quiet=args.quiet, epochs=args.train_epochs
    )
    models, _, _ = retrieval_efficientrag.train(opts, root, ["hotpotqa"])
    return models


def search_seconds(records: list[dict[str, Any]]) -> float:
    """Mean seconds per question the loop spent in the backend (its ``time_retrieval_s`` counter)."""
    return sum(float(r["counters"].get("time_retrieval_s", 0.0)) for r in records) / max(1, len(records))


def part1_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | n | Direct-R@10 | EfficientRAG recall | all-gold | chunks | s / question | search s / question "
        "| same chunks as |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        same = r.get("same_chunks_as")
        same_txt = f"{same[0]}: {same[1]}/{same[2]}" if same else "-"
        lines.append(
            f"| {r['backend']} | {r['n']} | {r['direct_r10']:.2f} | {r['recall']:.2f} | {r['all_gold']:.2f} | "
            f"{r['chunks']:.2f} | {r['s_per_question']:.3f} | {r['search_s_per_question']:.4f} | {same_txt} |"
        )
    return "\n".join(lines)


def run_part2(args: argparse.Namespace, work: Path) -> tuple[list[dict[str, Any]], float]:
    corpus_path, _ = backend_scale.build_corpus(Path(args.shared_data), work, max(args.sizes))
    dense_sizes = [s for s in args.sizes if s <= args.dense_max]
    rate = float("nan")
    if dense_sizes:
        _, rate = backend_scale.encode_prefix(corpus_path, work, max(dense_sizes), None)
    rows = []
    for size in args.sizes:
        for backend in args.backends:
            if backend in backend_scale.DENSE and size > args.dense_max:
                continue
            print(f"[scale] {backend} at {size} chunks ...", flush=True)
            rows.append(backend_scale.run_child(backend, size, work, args.child_timeout))
    return rows, rate


def part2_table(rows: list[dict[str, Any]], rate: float) -> str:
    lines = [
        "| chunks | backend | build s | peak RSS MB (before build) | ms / query, batch of 100 (index lookup) "
        "| R@10 (350 HotpotQA dev) |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["size"], r["backend"])):
        if "error" in r:
            lines.append(f"| {r['size']} | {r['backend']} | failed: {r['error']} | | | |")
            continue
        lines.append(
            f"| {r['size']} | {r['backend']} | {r['build_s']:.1f} | {r['peak_rss_mb']:.0f} "
            f"({r['rss_before_build_mb']:.0f}) | {r['ms_per_query']:.2f} ({r['ms_search_per_query']:.2f}) | "
            f"{r['recall_at_10']:.2f} |"
        )
    lines.append("")
    lines.append(
        f"Dense build times exclude passage encoding: MiniLM encoded {rate:.0f} passages/s here "
        "(nan: all embeddings were cached), so encoding N chunks adds N / that rate seconds."
    )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for backend in sorted({r["backend"] for r in rows}):
        pts = sorted((r["size"], r) for r in rows if r["backend"] == backend and "error" not in r)
        if not pts:
            continue
        xs = [s for s, _ in pts]
        axes[0].plot(xs, [r["ms_search_per_query"] for _, r in pts], marker="o", label=backend)
        axes[1].plot(xs, [r["peak_rss_mb"] for _, r in pts], marker="o", label=backend)
    labels = ("index lookup ms / query", "peak RSS of the process (MB)")
    axes[0].set_title("batch of 100 queries; query encoding excluded", fontsize=9)
    axes[1].set_title("one process per (backend, size)", fontsize=9)
    for ax, label in zip(axes, labels, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("corpus chunks")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared-data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--work-dir", default=str(REPO / "runs" / "bench_backends"))
    parser.add_argument(
        "--models",
        help="folder with labeler/best and filter/best (part 1); default: train a pair on the HotpotQA "
        "train file (benchmarks/retrieval_efficientrag.py's synthesis and MiniLM CPU presets) under the work dir",
    )
    parser.add_argument(
        "--train-epochs", type=int, default=1, help="Labeler epochs when training (default 1)"
    )
    parser.add_argument("--setting", default=str(REPO / "configs" / "efficientrag" / "bm25-chosen.yaml"))
    parser.add_argument(
        "--limit", type=int, default=None, help="first N dev questions in part 1 (default all)"
    )
    parser.add_argument("--dev-file", default="hotpotqa/dev_ircot.350.jsonl", help="part 1's HotpotQA file")
    parser.add_argument("--skip-part1", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 30_000, 100_000])
    parser.add_argument("--dense-max", type=int, default=30_000, help="largest size dense backends run at")
    parser.add_argument(
        "--backends", nargs="+", default=list(backend_scale.BACKENDS), choices=backend_scale.BACKENDS
    )
    parser.add_argument("--child-timeout", type=int, default=3600)
    parser.add_argument("--plot", default=str(REPO / "docs" / "img" / "backends_scale.png"))
    parser.add_argument("--quiet", action="store_true")
    args = retrieval_efficientrag.parse_protocol_args(parser, argv)
    work = Path(args.work_dir)
    report = []
    if not args.skip_part1:
        models = Path(args.models) if args.models else train_models(args, work / "train")
        rows = run_part1(args, work, models)
        (work / "part1.json").write_text(json.dumps(rows, indent=1))
        title = f"## Same work, every backend ({args.dev_file}, {rows[0]['n']} questions, its pooled corpus)"
        report += [title, "", part1_table(rows), ""]
        print("\n".join(report), flush=True)
    if args.sizes:
        rows, rate = run_part2(args, work / "scale")
        (work / "part2.json").write_text(json.dumps({"rows": rows, "encode_passages_per_s": rate}, indent=1))
        plot(rows, Path(args.plot))
        report += ["## Cost against corpus size", "", part2_table(rows, rate), "", f"Plot: {args.plot}", ""]
    report.append(
        "Rerun: python "
        + " ".join(shlex.quote(a) for a in [f"benchmarks/{Path(__file__).name}", *(argv or sys.argv[1:])])
    )
    text = "\n".join(report)
    (work / "report.md").write_text(text)
    print(text)
    failed = [r for r in (rows if args.sizes else []) if "error" in r]
    return 1 if args.sizes and len(failed) == len(rows) else 0


if __name__ == "__main__":
    from efficientrag.eval.interrupts import main_reporting_interrupts

    sys.exit(main_reporting_interrupts(main))
