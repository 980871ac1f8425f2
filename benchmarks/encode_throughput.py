"""Passage-encoding throughput: plain sentence-transformers vs our indexing path, same passages.

Rows (one invocation, same model weights, same passages, repeats interleaved so machine load hits
every row alike; the model loads are not timed):

- ``sentence-transformers``: ``SentenceTransformer(...).encode(passages, batch_size=...)``, which
  sorts by character length;
- ``efficientrag (float32)``: what ``efficientrag index`` runs: Encoder (batches cut from passages
  sorted by exact token length) writing float32 shards through EmbeddingStore.fill;
- ``efficientrag (bfloat16 autocast)``: the same with ``compute_dtype=bfloat16``;
- ``efficientrag (float32, N threads)`` for each ``--threads N``.

Each row also gives the smallest cosine between its embeddings and plain ST's (same vectors?), and
the table is followed by the share of padding positions that each length sort leaves per batch.

    python benchmarks/encode_throughput.py                                  # synthetic passages
    python benchmarks/encode_throughput.py --data corpus.jsonl --n 2000 --batch-size 32 --threads 1
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from efficientrag.hub import OFFLINE_DEFAULT_ENCODER, resolve_model_path

_SYNTHETIC_TEXT = (
    "the of and in to was a is for on as by with he at from his an were are which this be has or "
    "had first one their its new after but who not they have her she two been other when there all "
    "during into school time may years more most only over city some world would where later up "
    "such used many can state about national out known university united then made American "
    "Zürich Ōsaka Montréal São-Paulo 1887 2014 3.5 km² née Hendrik Tchaikovsky Khrushchev "
    "photosynthesis electroencephalography thermodynamics quasi-stellar Pyrénées Württemberg"
)
SYNTHETIC_WORDS = _SYNTHETIC_TEXT.split()


def synthetic_passages(n: int, seed: int = 0) -> list[str]:
    """Title + text with HotpotQA-like lengths (median ~90 words, long tail past 256 tokens),
    mixing common words with names, numbers and accents so characters per token vary as in
    real text."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        n_words = int(np.clip(rng.lognormal(mean=4.4, sigma=0.5), 5, 400))
        words = rng.choice(SYNTHETIC_WORDS, size=n_words)
        out.append(f"Passage {i}: " + " ".join(words) + ".")
    return out


def load_passages(path: str, n: int) -> list[str]:
    from efficientrag.data.corpus import Corpus

    return [c.contents for c in Corpus.load(path).chunks[:n]]


def measure_encode_throughput(
    passages: list[str],
    encoder_name: str = OFFLINE_DEFAULT_ENCODER,
    batch_size: int = 32,
    repeats: int = 3,
    *,
    threads: tuple[int, ...] = (),
    shard_size: int | None = None,
    device: str = "cpu",
) -> list[dict[str, Any]]:
    """One dict per row: variant, passages, batch_size, repeats, median seconds, passages/s,
    ratio to plain sentence-transformers, min cosine to its embeddings."""
    import torch
    from sentence_transformers import SentenceTransformer

    from efficientrag.data.corpus import Corpus
    from efficientrag.data.schema import Chunk
    from efficientrag.retrieval.config import RetrieverConfig
    from efficientrag.retrieval.embedding_store import EmbeddingStore, StoreSpec
    from efficientrag.retrieval.encoder import Encoder

    if not passages:
        raise ValueError("no passages to encode")
    shard_size = shard_size or RetrieverConfig().shard_size
    corpus = Corpus(Chunk(f"p{i}", "", text) for i, text in enumerate(passages))
    plain = SentenceTransformer(resolve_model_path(encoder_name), device=device, trust_remote_code=False)
    ours = Encoder(encoder_name, batch_size=batch_size, device=device, show_progress=False)
    default_threads = torch.get_num_threads()

    def run_plain() -> np.ndarray:
        return plain.encode(passages, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)

    def run_ours(dtype: str, n_threads: int | None = None) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            ours.compute_dtype = dtype
            torch.set_num_threads(n_threads or default_threads)
            try:
                with tempfile.TemporaryDirectory(prefix="encode-bench-") as tmp:
                    store = EmbeddingStore.open(tmp, StoreSpec.for_corpus(ours, corpus, shard_size))
                    store.fill(corpus, ours, show_progress=False)
                    return np.concatenate([np.array(shard) for _, shard in store.iter_shards()])
            finally:
                ours.compute_dtype = "float32"
                torch.set_num_threads(default_threads)

        return run

    variants: dict[str, Callable[[], np.ndarray]] = {
        "sentence-transformers encode()": run_plain,
        "efficientrag (float32)": run_ours("float32"),
        "efficientrag (bfloat16 autocast)": run_ours("bfloat16"),
    }
    for n in threads:
        variants[f"efficientrag (float32, {n} thread{'s' if n > 1 else ''})"] = run_ours("float32", n)

    warm = passages[: min(len(passages), 2 * batch_size)]
    plain.encode(warm, batch_size=batch_size, show_progress_bar=False)
    ours.encode_passages(warm)
    times: dict[str, list[float]] = {name: [] for name in variants}
    outputs: dict[str, np.ndarray] = {}
    for _ in range(repeats):
        for name, run in variants.items():
            start = time.perf_counter()
            outputs[name] = run()
            times[name].append(time.perf_counter() - start)

    reference = outputs["sentence-transformers encode()"]
    base_rate = len(passages) / statistics.median(times["sentence-transformers encode()"])
    rows = []
    for name in variants:
        seconds = statistics.median(times[name])
        emb = outputs[name]
        cos = np.sum(emb * reference, axis=1) / (
            np.linalg.norm(emb, axis=1) * np.linalg.norm(reference, axis=1) + 1e-12
        )
        rows.append(
            {
                "variant": name,
                "passages": len(passages),
                "batch_size": batch_size,
                "repeats": repeats,
                "seconds_median": round(seconds, 3),
                "passages_per_s": round(len(passages) / seconds, 2),
                "ratio_vs_st": round(len(passages) / seconds / base_rate, 3),
                "min_cosine_vs_st": round(float(cos.min()), 6),
            }
        )
    return rows


def padding_shares(passages: list[str], encoder_name: str, batch_size: int) -> dict[str, float]:
    """Share of computed positions that are padding, batching by character vs token length."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(resolve_model_path(encoder_name))
    limit = min(tok.model_max_length, 512)
    lengths = np.array([len(ids) for ids in tok(passages, truncation=True, max_length=limit)["input_ids"]])
    chars = np.array([len(p) for p in passages])

    def share(order: np.ndarray) -> float:
        padded = sum(
            lengths[order[i : i + batch_size]].max() * len(order[i : i + batch_size])
            for i in range(0, len(order), batch_size)
        )
        return round(1 - lengths.sum() / padded, 4)

    return {
        "char-length sort (sentence-transformers)": share(np.argsort(-chars, kind="stable")),
        "token-length sort (efficientrag)": share(np.argsort(-lengths, kind="stable")),
    }


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| variant | passages/s | ratio vs ST | median s | min cosine vs ST |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {r['passages_per_s']:.1f} | {r['ratio_vs_st']:.2f} | "
            f"{r['seconds_median']:.2f} | {r['min_cosine_vs_st']:.6f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", help="corpus JSONL ({id,title,text}); default: synthetic passages")
    parser.add_argument("--n", type=int, default=1000, help="passages to encode (default 1000)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--encoder", default=OFFLINE_DEFAULT_ENCODER)
    parser.add_argument("--threads", type=int, nargs="*", default=[], help="extra rows with N torch threads")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    passages = load_passages(args.data, args.n) if args.data else synthetic_passages(args.n)
    source = args.data or "synthetic"
    rows = measure_encode_throughput(
        passages, args.encoder, args.batch_size, args.repeats, threads=tuple(args.threads), device=args.device
    )
    import torch

    print(
        f"\nEncode throughput: {len(passages)} passages from {source}, encoder {args.encoder}, "
        f"batch {args.batch_size}, median of {args.repeats}, device {args.device}, "
        f"{torch.get_num_threads()} torch threads\n"
    )
    print(markdown_table(rows))
    print("\nPadding share of computed positions per batch:")
    for name, share in padding_shares(passages, args.encoder, args.batch_size).items():
        print(f"- {name}: {share:.1%}")
    rerun = sys.argv[1:] if argv is None else argv
    print("\nRerun: " + shlex.join(["python", "benchmarks/encode_throughput.py", *rerun]))


if __name__ == "__main__":
    main()
