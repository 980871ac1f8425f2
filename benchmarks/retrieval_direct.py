"""Direct-R (single-shot retrieval) on the shared dev samples, plus indexing throughput.

For HotpotQA (IRCoT 350), 2WikiMultihopQA (350) and MuSiQue-Ans (70 dev), each over its own pooled
corpus and over the combined pool of all three, with MiniLM dense (FAISS Flat) and BM25: oracle-chunk
recall and all-gold rate at k = 2, 4, 6, 10, 20 (EfficientRAG's definitions) and FlashRAG's
answer-containment recall. Then passage-encoding throughput of our indexing path next to a plain
``SentenceTransformer.encode`` on the same passages (benchmarks/encode_throughput.py).

    python benchmarks/retrieval_direct.py
    python benchmarks/retrieval_direct.py --shared-data ../shared/data --throughput-n 1000
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KS = (2, 4, 6, 10, 20)
DATASETS = (
    ("hotpotqa", "hotpotqa/dev_ircot.350.jsonl"),
    ("2wikimultihopqa", "2wikimultihopqa/dev.350.json"),
    ("musique", "musique/musique_ans_v1.0_dev.70.jsonl"),
)


def run_pool(
    name: str, sources: list[tuple[str, Path]], retriever_kind: str, work_dir: Path
) -> list[dict[str, Any]]:
    """Evaluate Direct-R for every dataset of one pool; one result row per dataset."""
    from efficientrag.baselines.base import SharedSettings
    from efficientrag.baselines.direct_r import DirectRetrieval
    from efficientrag.config import load_config
    from efficientrag.eval.runner import run_method
    from efficientrag.eval.summary import summarize_records
    from efficientrag.experiment.config import ExperimentConfig
    from efficientrag.experiment.prepared_data import prepare_data
    from efficientrag.jsonl import read_jsonl
    from efficientrag.retrieval.factory import build_retriever

    (main_ds, main_path), *extra = sources
    cfg = load_config(
        ExperimentConfig,
        data={
            "work_dir": str(work_dir / name),
            "data": {
                "dataset": main_ds,
                "path": str(main_path),
                "extra": [{"dataset": d, "path": str(p)} for d, p in extra],
            },
            "retriever": {"kind": retriever_kind},
        },
    )
    pooled = prepare_data(cfg)
    retriever = build_retriever(cfg.retriever, pooled.corpus, cfg.index_dir, show_progress=False)
    out = cfg.eval_dir(f"direct_r-{retriever_kind}")
    start = time.perf_counter()
    method = DirectRetrieval(retriever, None, shared=SharedSettings(ks=tuple(KS)))
    run_method(method, pooled.examples, out, ks=KS, resume=False, progress=False)
    seconds = time.perf_counter() - start
    records = list(read_jsonl(out / "predictions.jsonl"))
    by_id = {ex.id: ex.dataset for ex in pooled.examples}
    rows = []
    for ds, _ in sources:
        subset = [r for r in records if by_id[r["id"]] == ds]
        summary = summarize_records(subset, ks=KS)
        rows.append(
            {
                "pool": name,
                "pool_chunks": len(pooled.corpus),
                "retriever": "MiniLM flat" if retriever_kind == "dense" else "BM25",
                "dataset": ds,
                "summary": summary,
                "ms_per_question": 1000 * seconds / max(1, len(records)),
            }
        )
    return rows


def results_table(rows: list[dict[str, Any]]) -> str:
    head = "| pool (chunks) | retriever | dataset | n | " + " | ".join(f"R@{k}" for k in KS)
    head += " | " + " | ".join(f"AG@{k}" for k in KS) + " | AnsR@10 |"
    lines = [head, "|" + "---|" * (4 + 2 * len(KS) + 1)]
    for row in rows:
        r = row["summary"]["retrieval"]
        recall = " | ".join(f"{r[str(k)]['recall']:.1f}" for k in KS)
        all_gold = " | ".join(f"{r[str(k)]['all_gold']:.1f}" for k in KS)
        lines.append(
            f"| {row['pool']} ({row['pool_chunks']}) | {row['retriever']} | {row['dataset']} | "
            f"{row['summary']['n']} | {recall} | {all_gold} | {r['10']['answer_recall']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--work-dir", default=str(REPO / "runs" / "benchmarks" / "retrieval_direct"))
    parser.add_argument("--retrievers", nargs="+", default=["dense", "bm25"], choices=["dense", "bm25"])
    parser.add_argument(
        "--throughput-n", type=int, default=800, help="passages for the throughput rows (0: skip)"
    )
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)

    shared = Path(args.shared_data)
    if not shared.is_dir():
        sys.exit(f"shared data not found at {shared} (pass --shared-data)")
    work = Path(args.work_dir)
    sources = [(ds, shared / rel) for ds, rel in DATASETS]
    rows: list[dict[str, Any]] = []
    for kind in args.retrievers:
        for ds, path in sources:
            rows.extend(run_pool(ds, [(ds, path)], kind, work))
        rows.extend(run_pool("combined", sources, kind, work))

    print("\n## Direct-R: oracle-chunk recall (R@k) and all-gold rate (AG@k), %\n")
    print(results_table(rows))
    print("\nAnsR@10: FlashRAG answer-containment recall at k=10 (yes/no answers count as misses).")

    if args.throughput_n > 0:
        from encode_throughput import markdown_table, measure_encode_throughput, padding_shares

        from efficientrag.data.corpus import Corpus

        corpus = Corpus.load(work / "hotpotqa" / "data" / "corpus.jsonl")
        passages = [c.contents for c in corpus.chunks[: args.throughput_n]]
        tput = measure_encode_throughput(passages, batch_size=args.batch_size, repeats=3)
        print(
            f"\n## Passage encoding, MiniLM on CPU, {len(passages)} HotpotQA passages, batch {args.batch_size}\n"
        )
        print(markdown_table(tput))
        print(
            "\nPadding share per batch:",
            padding_shares(passages, "sentence-transformers/all-MiniLM-L6-v2", args.batch_size),
        )
    print(
        "\nRerun: python "
        + " ".join(shlex.quote(a) for a in [f"benchmarks/{Path(__file__).name}", *(argv or sys.argv[1:])])
    )


if __name__ == "__main__":
    from efficientrag.eval.interrupts import main_reporting_interrupts

    sys.exit(main_reporting_interrupts(main))
