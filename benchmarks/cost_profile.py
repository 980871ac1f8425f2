"""Where a question's time goes: the loop and its Labeler as a one-hop reranker, stage by stage.

Both methods run through the same ``EfficientRAG`` code over the same loaded models, so dtype,
input length, batch size and threads are the same: the reranker is the loop's one-hop setting
(``budget_policy=rerank``, ``max_hops=1``, the question's top N judged, no Filter call), as
``efficientrag adapt`` offers it. For each model variant (float32; bf16 where the CPU has bfloat16
kernels; the same Labeler cut to its first 4 layers, the shape of the distilled 4-layer student,
timed only) every method runs the same questions, slice by slice with the order rotating, so a
background load slows all alike. A question's time is split into:

- ``tokenize``: words to token ids (the Labeler's ``encode``);
- ``pad``: token ids to padded batch tensors (the collator), with the share of padded positions;
- ``embeddings``, ``layers``, ``heads``: the Labeler network's forward pass (``heads`` is the rest
  of it: the attention mask, pooling and both heads);
- ``decode``: Labeler time outside the above (sub-word to word scores, per-row Python);
- ``filter``: the Filter, whole; ``search``: query encoding and index search;
- ``python``: the loop's own code between them (the wall time less every stage above).

It also gives the Labeler pairs per question by hop (mean and median) and milliseconds per pair.
What does not shrink with depth is everything but ``layers``: compare the 6- and 4-layer rows.

    python benchmarks/cost_profile.py                    # after `efficientrag quickstart`
    python benchmarks/cost_profile.py --questions 200 --variants float bf16

The questions are the toy world's (``configs/experiments/toy.yaml``, dense search); ``--config``
takes another experiment preset.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from report_output import command_line, publish

from efficientrag.adapt.method_choice import LABELER_RERANK, rerank_settings
from efficientrag.config import load_config
from efficientrag.eval.interrupts import main_reporting_interrupts
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.prepared_data import prepare_data
from efficientrag.retrieval.factory import build_retriever

STAGES = ("tokenize", "pad", "embeddings", "layers", "heads", "decode", "filter", "search", "python")
DTYPES = ("float", "bf16")


class Clock:
    """Seconds per (method, variant, hop, stage), and padded / real token counts."""

    def __init__(self) -> None:
        self.seconds: dict[tuple[str, ...], float] = defaultdict(float)
        self.tokens: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        self.key: tuple[str, str] = ("", "")
        self.hop = 0

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[(*self.key, str(self.hop), stage)] += seconds

    def total(self, key: tuple[str, str], stage: str) -> float:
        return sum(v for k, v in self.seconds.items() if k[:2] == key and k[3] == stage)


def timed(clock: Clock, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock.add(stage, time.perf_counter() - t0)

    return run


def instrument_models(
    lab: Any, fil: Any, clock: Clock, calls: dict[tuple[str, str], list[tuple[Any, dict]]] | None
) -> None:
    """Timers around the models' stages, in place: their methods wrapped, the Labeler network's parts
    timed by forward hooks; with ``calls``, every Labeler call's inputs recorded under the clock's key
    (to replay them)."""
    predict = lab.predict

    def record(inputs: Any, **kwargs: Any) -> Any:
        if calls is not None:
            calls[clock.key].append((list(inputs), dict(kwargs)))
        return predict(inputs, **kwargs)

    lab.encode = timed(clock, "tokenize", lab.encode)
    lab.predict = timed(clock, "labeler", record)
    fil.predict = timed(clock, "filter", fil.predict)
    make = lab.collator

    def collator(**kwargs: Any) -> Any:
        inner = make(**kwargs)

        def collate(items: Any) -> Any:
            t0 = time.perf_counter()
            batch = inner(items)
            clock.add("pad", time.perf_counter() - t0)
            counts = clock.tokens[clock.key]
            counts[0] += int(batch["attention_mask"].sum())
            counts[1] += int(batch["attention_mask"].numel())
            return batch

        return collate

    lab.collator = collator
    backbone = lab.network.backbone
    _hook(lab.network, clock, "forward")
    _hook(backbone.embeddings, clock, "embeddings")
    for layer in backbone.encoder.layer:
        _hook(layer, clock, "layers")


def instrument_hops(rag: Any, clock: Clock) -> None:
    """The hop each stage's time belongs to."""
    hop = rag._hop

    def each_hop(n: int, states: Any) -> None:
        clock.hop = n
        hop(n, states)

    rag._hop = each_hop


def _hook(module: Any, clock: Clock, stage: str) -> None:
    starts: list[float] = []
    module.register_forward_pre_hook(lambda *_: starts.append(time.perf_counter()))
    module.register_forward_hook(lambda *_: clock.add(stage, time.perf_counter() - starts.pop()))


class _TimedSearch:
    """The retriever, its ``search`` timed (everything else passes through)."""

    def __init__(self, inner: Any, clock: Clock) -> None:
        self._inner, self._clock = inner, clock

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return timed(self._clock, "search", self._inner.search)(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def load_models(models: Path, dtype: str, layers: int = 0) -> tuple[Any, Any]:
    """The Labeler and Filter in ``dtype``; with ``layers``, the Labeler cut to its first ``layers``."""
    from torch import nn

    from efficientrag.models import Filter, Labeler

    mode = "bf16" if dtype == "bf16" else "none"
    lab = Labeler.from_pretrained(models / "labeler" / "best", device="cpu").quantize(mode)
    fil = Filter.from_pretrained(models / "filter" / "best", device="cpu").quantize(mode)
    if layers:
        encoder = lab.network.backbone.encoder
        encoder.layer = nn.ModuleList(list(encoder.layer)[:layers])
        lab.network.backbone.config.num_hidden_layers = layers
    return lab, fil


@contextmanager
def keyed(clock: Clock, key: tuple[str, str]) -> Iterator[None]:
    clock.key, clock.hop = key, 0
    t0 = time.perf_counter()
    yield
    clock.add("wall", time.perf_counter() - t0)


Key = tuple[str, str]


def profile(args: argparse.Namespace) -> tuple[Clock, dict[Key, list[Any]], dict[Key, Key], int]:
    """Every method on every dtype, slice by slice in rotating order; then each run's Labeler calls
    replayed through the cut Labeler. Returns the clock, each key's results, and each cut Labeler
    row's teacher row (whose Filter, search and loop it shares)."""
    import torch

    from efficientrag.pipeline.efficientrag import EfficientRAG

    exp = load_config(ExperimentConfig, args.config)
    pooled = prepare_data(exp)
    clock = Clock()
    retriever = _TimedSearch(
        build_retriever(exp.retriever, pooled.corpus, exp.index_dir, show_progress=False), clock
    )
    questions = [ex.question for ex in pooled.examples[: args.questions]]
    loop = replace(exp.efficientrag, labeler=None, filter=None, device="cpu", quantize="none")
    budget = loop.chunk_budget or args.budget
    methods = {"loop": loop, LABELER_RERANK: rerank_settings(loop, budget, args.rerank_n)[LABELER_RERANK]}
    calls: dict[Key, list[tuple[Any, dict]]] = defaultdict(list)
    rags = {}
    for dtype in args.dtypes:
        lab, fil = load_models(args.models, dtype)
        instrument_models(lab, fil, clock, calls)
        for name, cfg in methods.items():
            rags[(name, dtype)] = rag = EfficientRAG(retriever, lab, fil, cfg)
            instrument_hops(rag, clock)
            rag.retrieve_batch(questions[: args.batch])  # warm-up, not counted
    clock.seconds.clear()
    clock.tokens.clear()
    calls.clear()
    results: dict[Key, list[Any]] = defaultdict(list)
    order = list(rags)
    for n, start in enumerate(range(0, len(questions), args.batch)):
        chunk = questions[start : start + args.batch]
        for key in order[n % len(order) :] + order[: n % len(order)]:
            with keyed(clock, key):
                results[key] += rags[key].retrieve_batch(chunk)
    teacher_of: dict[Key, Key] = {}
    for dtype in args.dtypes if args.student_layers else ():
        lab, _ = load_models(args.models, dtype, args.student_layers)
        instrument_models(lab, _, clock, None)
        for name in methods:
            key = (name, f"{dtype}, first {args.student_layers} layers")
            teacher_of[key], results[key] = (name, dtype), results[(name, dtype)]
            clock.key = key
            for inputs, kwargs in calls[(name, dtype)]:
                lab.predict(inputs, **kwargs)
    return clock, results, teacher_of, torch.get_num_threads()


def stage_seconds(clock: Clock, key: Key, teacher: Key | None) -> dict[str, float]:
    """Seconds by stage for ``key``; a cut Labeler's row takes its Filter, search and loop code from
    its teacher's run (the same pairs, replayed)."""
    stage = {s: clock.total(key, s) for s in ("tokenize", "pad", "embeddings", "layers")}
    forward, labeler = clock.total(key, "forward"), clock.total(key, "labeler")
    stage["heads"] = forward - stage["embeddings"] - stage["layers"]
    stage["decode"] = labeler - forward - stage["tokenize"] - stage["pad"]
    rest = teacher or key
    stage["filter"], stage["search"] = clock.total(rest, "filter"), clock.total(rest, "search")
    outside = clock.total(rest, "wall") - clock.total(rest, "labeler") - stage["filter"] - stage["search"]
    stage["python"] = outside
    stage["labeler"], stage["wall"] = labeler, labeler + stage["filter"] + stage["search"] + outside
    return stage


def render(
    args: argparse.Namespace, clock: Clock, results: dict, teacher_of: dict, threads: int, command: str
) -> str:
    lines = [
        f"# Cost profile: {args.questions} questions of `{args.config}`, batches of {args.batch}, "
        f"{threads} torch threads",
        "",
        f"    {command}",
        "",
        "Milliseconds per question by stage; Labeler pairs per question (mean, median, mean by hop). "
        f"The rows of a Labeler cut to its first {args.student_layers} layers replay the same pairs "
        "(the shape of the distilled student, timed only: its answers are not used).",
        "",
        "| method | models | s / q | pairs / q (median; by hop) | Labeler ms / pair | "
        + " | ".join(STAGES)
        + " | padding |",
        "|---|---|---|---|---|" + "---|" * len(STAGES) + "---|",
    ]
    for key, res in results.items():
        n = len(res)
        stage = stage_seconds(clock, key, teacher_of.get(key))
        pairs = [r.counters.get("labeler_pairs", 0.0) for r in res]
        by_hop: dict[int, float] = defaultdict(float)
        for r in res:
            for h, hop in enumerate(r.trace):
                by_hop[h] += sum(1 for hits in hop.hits for x in hits if x.continue_prob is not None)
        real, padded = clock.tokens[key]
        hops = " / ".join(f"{by_hop[h] / n:.1f}" for h in sorted(by_hop))
        cells = " | ".join(f"{1000 * stage[s] / n:.1f}" for s in STAGES)
        lines.append(
            f"| {key[0]} | {key[1]} | {stage['wall'] / n:.3f} | {sum(pairs) / n:.1f} "
            f"({statistics.median(pairs):.0f}; {hops}) | {1000 * stage['labeler'] / max(1.0, sum(pairs)):.2f} "
            f"| {cells} | {100 * (1 - real / max(1, padded)):.0f}% |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=Path, default=Path("runs/quickstart/models"))
    p.add_argument("--config", default="configs/experiments/toy.yaml", help="experiment preset")
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("--batch", type=int, default=32, help="questions per batch")
    p.add_argument("--rerank-n", type=int, default=20, help="the reranker's N")
    p.add_argument("--budget", type=int, default=6, help="chunks, when the loop has no chunk_budget")
    p.add_argument(
        "--dtypes", nargs="+", default=None, choices=DTYPES, help="default: float, and bf16 where fast"
    )
    p.add_argument(
        "--student-layers", type=int, default=4, help="also time the Labeler cut to this depth (0: no)"
    )
    p.add_argument("--out", type=Path, help="also write the table here")
    args = p.parse_args(argv)
    if min(args.questions, args.batch, args.rerank_n, args.budget) < 1 or args.student_layers < 0:
        p.error("--questions, --batch, --rerank-n and --budget must be >= 1, --student-layers >= 0")
    for kind in ("labeler", "filter"):
        if not (args.models / kind / "best" / "model.safetensors").is_file():
            p.error(f"{args.models / kind / 'best'}: no trained model (run `efficientrag quickstart`)")
    if args.dtypes is None:
        from efficientrag.models.export import resolve_quantize

        args.dtypes = ["float"] + (["bf16"] if resolve_quantize("auto", "cpu") == "bf16" else [])
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    clock, results, teacher_of, threads = profile(args)
    command = command_line(__file__, argv)
    text = render(args, clock, results, teacher_of, threads, command.strip())
    publish(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main_reporting_interrupts(main))
