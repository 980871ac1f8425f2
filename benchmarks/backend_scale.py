"""Part 2 of benchmarks/retrieval_backends.py: how build time, peak memory, query latency and the
real questions' recall grow with the corpus, per backend, each (backend, size) in a child process.

The corpus grows by prefix: the HotpotQA dev pool (whose 350 questions are measured) first, then
the other real pools and the 2Wiki open-domain corpus, then toy-world paragraphs (fresh seeds,
fictional entities: true distractors). Dense backends read passage embeddings computed once by
the parent (``embeddings.npy``, encoded block by block, resumable); their build time is the index
build from those vectors, and the encoding cost is reported beside it (passages/s measured here).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REAL_POOLS = (
    ("hotpotqa", "hotpotqa/dev_ircot.350.jsonl", None),
    ("2wikimultihopqa", "2wikimultihopqa/dev.350.json", None),
    ("musique", "musique/musique_ans_v1.0_dev.70.jsonl", None),
    ("hotpotqa", "hotpotqa/hotpot_train.299.json", None),
    ("2wikimultihopqa", "2wikimultihopqa/train.200.json", None),
    ("musique", "musique/musique_ans_v1.0_train.200.jsonl", None),
    (
        "2wikimultihopqa",
        "2wikimultihopqa/train_opendomain.questions1000.json",
        "2wikimultihopqa/train_opendomain.corpus5813.json",
    ),
)
BACKENDS = ("bm25s", "milvus-bm25", "faiss-flat", "faiss-hnsw", "faiss-ivf", "milvus-dense")
DENSE = ("faiss-flat", "faiss-hnsw", "faiss-ivf", "milvus-dense")
EMB_BLOCK = 2_500
QUERY_BATCH = 100


# --- corpus (parent) -----------------------------------------------------------------------------


def build_corpus(shared: Path, work: Path, size: int) -> tuple[Path, Path]:
    """``corpus.jsonl`` holding at least ``size`` chunks in growth order, and the measured
    questions (``questions.jsonl``: id, question, gold ids); reused when already big enough."""
    from efficientrag.data.config import DataConfig, ToyWorldConfig
    from efficientrag.data.loader import load_data
    from efficientrag.jsonl import read_jsonl, write_jsonl

    corpus_path, questions_path = work / "corpus.jsonl", work / "questions.jsonl"
    if corpus_path.is_file() and sum(1 for _ in read_jsonl(corpus_path)) >= size:
        return corpus_path, questions_path
    rows: list[dict[str, str]] = []
    seen: set[str] = set()

    def add(chunks: Any, prefix: str) -> None:
        for c in chunks:
            cid = f"{prefix}{c.id}"
            if cid not in seen:
                seen.add(cid)
                rows.append({"id": cid, "title": c.title, "text": c.text})

    for i, (dataset, path, corpus) in enumerate(REAL_POOLS):
        pooled = load_data(
            DataConfig(
                dataset=dataset, path=str(shared / path), corpus_path=str(shared / corpus) if corpus else None
            )
        )
        if i == 0:  # the measured questions keep their ids, so gold ids match
            add(pooled.corpus, "")
            write_jsonl(
                questions_path,
                ({"id": ex.id, "question": ex.question, "gold": ex.gold_chunk_ids} for ex in pooled.examples),
            )
        else:
            add(pooled.corpus, f"pool{i}/")
    seed = 1
    while len(rows) < size:
        toy = load_data(DataConfig(dataset="toy", toy=ToyWorldConfig(seed=seed, num_questions=3_000)))
        add(toy.corpus, f"toy{seed}/")
        seed += 1
    write_jsonl(corpus_path, rows)
    return corpus_path, questions_path


def encode_prefix(corpus_path: Path, work: Path, n: int, encoder_name: str | None) -> tuple[Path, float]:
    """Embeddings of the first ``n`` chunks, block by block (a killed run keeps its blocks), and
    the passages per second measured on the blocks encoded now (nan when all were cached)."""
    from efficientrag.data.corpus import Corpus
    from efficientrag.retrieval.encoder import Encoder

    corpus = Corpus.load(corpus_path)
    blocks = work / "emb_blocks"
    blocks.mkdir(parents=True, exist_ok=True)
    encoder = None
    encoded, seconds = 0, 0.0
    for b in range(math.ceil(n / EMB_BLOCK)):
        start, stop = b * EMB_BLOCK, min((b + 1) * EMB_BLOCK, n)
        if block_file(blocks, b, stop - start) is not None:
            continue
        encoder = encoder or Encoder(encoder_name or "all-MiniLM-L6-v2")
        texts = [c.contents for c in corpus.chunks[start:stop]]
        t0 = time.perf_counter()
        emb = encoder.encode_passages(texts)
        seconds += time.perf_counter() - t0
        encoded += len(texts)
        path = blocks / f"{b:05d}-{stop - start}.npy"
        np.save(path.with_suffix(".tmp.npy"), emb)
        os.replace(path.with_suffix(".tmp.npy"), path)
    return blocks, (encoded / seconds if seconds else float("nan"))


def block_file(blocks: Path, b: int, rows: int) -> Path | None:
    """The saved block ``b`` holding at least ``rows`` rows (a last, shorter block is redone)."""
    best = max(blocks.glob(f"{b:05d}-*.npy"), key=lambda p: int(p.stem.split("-")[1]), default=None)
    return best if best is not None and int(best.stem.split("-")[1]) >= rows else None


# --- one measurement (child) ---------------------------------------------------------------------


def measure(backend: str, size: int, work: Path) -> dict[str, Any]:
    from efficientrag.data.corpus import Corpus
    from efficientrag.jsonl import read_jsonl
    from efficientrag.retrieval.metrics import oracle_recall

    corpus = Corpus(Corpus.load(work / "corpus.jsonl").chunks[:size])
    questions = list(read_jsonl(work / "questions.jsonl"))
    # Loaded before the clock starts: the query encoder (and the passage embeddings) are not the
    # index's cost; the RSS they take is reported so the index's own share can be read off.
    encoder = PrecomputedEncoder(work / "emb_blocks", corpus) if backend in DENSE else None
    rss_before = current_rss_mb()
    t0 = time.perf_counter()
    retriever = _build(backend, corpus, work, encoder)
    build_s = time.perf_counter() - t0
    queries = [q["question"] for q in questions]
    retriever.search(queries[:QUERY_BATCH], 10)  # warm-up
    runs, lookups = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        retriever.search(queries[:QUERY_BATCH], 10)
        runs.append(time.perf_counter() - t0)
        lookups.append(retriever.last_timings.get("search", runs[-1]))
    hits = retriever.search(queries, 10)
    recall = [oracle_recall([h.id for h in hs], q["gold"]) for hs, q in zip(hits, questions, strict=True)]
    return {
        "backend": backend,
        "size": size,
        "build_s": build_s,
        "peak_rss_mb": peak_rss_mb(),
        "rss_before_build_mb": rss_before,
        "ms_per_query": 1000 * statistics.median(runs) / QUERY_BATCH,
        "ms_search_per_query": 1000 * statistics.median(lookups) / QUERY_BATCH,
        "recall_at_10": 100 * sum(recall) / len(recall),
        "questions": len(questions),
    }


def current_rss_mb() -> float:
    return _status_mb("VmRSS")


def peak_rss_mb() -> float:
    """This process's own high-water mark. Not ``getrusage``'s ``ru_maxrss``: Linux carries the
    parent's peak across fork and exec, so a child of a large process would report the parent's."""
    return _status_mb("VmHWM")


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _build(backend: str, corpus: Any, work: Path, encoder: Any) -> Any:
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.retrieval.factory import build_retriever
    from efficientrag.retrieval.milvus.config import MilvusConfig

    tmp = work / "indexes" / f"{backend}-{len(corpus)}"
    if backend == "bm25s":
        return build_retriever(RetrieverConfig(kind="bm25"), corpus, None, show_progress=False)
    if backend == "milvus-bm25":
        cfg = RetrieverConfig(kind="milvus", milvus=MilvusConfig(uri=str(tmp / "m.db"), search="bm25"))
        return build_retriever(cfg, corpus, None, rebuild=True, show_progress=False)
    if backend == "milvus-dense":
        cfg = RetrieverConfig(kind="milvus", milvus=MilvusConfig(uri=str(tmp / "m.db"), search="dense"))
        return build_retriever(cfg, corpus, None, rebuild=True, encoder=encoder, show_progress=False)
    from efficientrag.retrieval.dense import DenseRetriever
    from efficientrag.retrieval.faiss_index import build_index

    cfg = RetrieverConfig(index_type=backend.removeprefix("faiss-"))
    index, params = build_index(encoder.store(), cfg, show_progress=False)
    return DenseRetriever(corpus, encoder, index, {"index_params": params})


class PrecomputedEncoder:
    """The parent's passage embeddings (row i = chunk i) and a real encoder for the queries."""

    def __init__(self, blocks: Path, corpus: Any) -> None:
        from efficientrag.retrieval.encoder import Encoder

        self.query_encoder = Encoder(show_progress=False)
        self.name, self.dim = self.query_encoder.name, self.query_encoder.dim
        n = len(corpus)
        files = [
            block_file(blocks, b, min(EMB_BLOCK, n - b * EMB_BLOCK)) for b in range(math.ceil(n / EMB_BLOCK))
        ]
        if None in files:
            raise SystemExit(f"{blocks} lacks the embeddings of the first {n} chunks: run the parent first")
        self.matrix = np.concatenate([np.load(f, mmap_mode="r") for f in files])[:n]
        if len(self.matrix) != n:
            raise SystemExit(
                f"{blocks} holds {len(self.matrix)} embeddings, {n} needed: run the parent first"
            )
        self.row_of = {c.contents: i for i, c in enumerate(corpus)}

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self.query_encoder.encode_queries(texts)

    def encode_passages(self, texts: list[str], **_: Any) -> np.ndarray:
        progress = _.get("progress")
        if progress is not None:
            progress.update(len(texts))
        return self.matrix[[self.row_of[t] for t in texts]]

    def describe(self) -> dict[str, Any]:
        return self.query_encoder.describe()

    def probe(self) -> np.ndarray:
        return self.query_encoder.probe()

    def store(self) -> Any:
        class Store:  # what faiss_index.build_index reads from an EmbeddingStore
            spec = type("Spec", (), {"dim": self.dim})
            num_rows = len(self.matrix)

            def iter_shards(inner):  # noqa: N805
                for start in range(0, len(self.matrix), EMB_BLOCK):
                    yield start, np.asarray(self.matrix[start : start + EMB_BLOCK])

            def gather(inner, rows):  # noqa: N805
                return np.asarray(self.matrix[np.asarray(rows)])

        return Store()


def run_child(backend: str, size: int, work: Path, timeout_s: int) -> dict[str, Any]:
    """One measurement in a fresh process, so its peak RSS is its own; cached as JSON."""
    out = work / "results" / f"{backend}-{size}.json"
    if out.is_file():
        return json.loads(out.read_text())
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, __file__, backend, str(size), str(work)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"backend": backend, "size": size, "error": f"over {timeout_s}s"}
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-1:] or ["?"]
        return {"backend": backend, "size": size, "error": tail[0][:200]}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    out.write_text(json.dumps(result))
    return result


if __name__ == "__main__":
    # One measurement in its own process, started by retrieval_backends.py (its peak memory alone).
    if len(sys.argv) != 4 or not sys.argv[2].isdigit():
        sys.exit("usage: backend_scale.py BACKEND SIZE WORK_DIR (run by benchmarks/retrieval_backends.py)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    b, s, w = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    print(json.dumps(measure(b, s, w)))
