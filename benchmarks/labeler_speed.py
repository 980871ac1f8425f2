"""EfficientRAG's CPU cost, side by side: the float Labeler/Filter against faster variants on the same
questions, corpus, index and setting, in one run.

Every variant retrieves the same dev questions. The questions are cut into slices and each slice is
run by every variant in turn (the order rotates from slice to slice), so a background load slows all
variants alike; the table reports per-question Labeler, Filter and total time, the speed-up over the
float models, and recall / all-gold with the difference to the float models.

Variants: ``float`` (the saved models), ``int8`` (dynamic int8 quantization of both models'
Linear layers, ``efficientrag.quantize=int8``), ``bf16`` (both models cast to bfloat16,
``efficientrag.quantize=bf16``), ``onnx`` and ``onnx-int8`` (both models through ONNX Runtime,
fp32 / int8 weights; the onnx extra); each may add ``+topN`` (``top_k=N`` per query)
and ``+lenN`` (Labeler inputs cut to N tokens), e.g. ``onnx-int8+top8+len128``.

    python benchmarks/labeler_speed.py --models runs/bench_protocol/bm25/models/hotpotqa+2wikimultihopqa+musique \\
        --retriever bm25 --dataset hotpotqa --limit 100

``--split validation`` runs the protocol's validation questions of the dataset's train file instead
(the questions a faster variant is chosen on); the default ``dev`` reports on dev questions.

``--models`` is a folder with ``labeler/best`` and ``filter/best`` (what
``benchmarks/retrieval_efficientrag.py`` writes); the setting defaults to the one that benchmark
chose on validation questions (its ``results-*.json``), or ``--setting key=value ...``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from report_output import command_line, publish
from retrieval_efficientrag import (
    DATASETS,
    DEFAULT_SHARED,
    DEV_FILES,
    TRAIN_FILES,
    ProtocolOptions,
    open_pool,
    quick_config,
    validation_examples,
)


def chosen_setting(models: Path) -> list[str]:
    """The overrides the protocol benchmark chose on validation questions (first results file)."""
    for path in sorted(models.glob("results-*.json")):
        label, overrides = json.loads(path.read_text(encoding="utf-8"))["setting"]
        return list(overrides)
    raise SystemExit(f"no results-*.json under {models}: pass --setting key=value ...")


MODES = ("int8", "bf16", "onnx", "onnx-int8")
USAGE = "float | int8 | bf16 | onnx | onnx-int8, then optional +topN and +lenN (e.g. onnx-int8+top6+len128)"


def variants(names: list[str], base: list[str]) -> dict[str, list[str]]:
    """``float``, ``int8``, ``bf16``, ``onnx`` or ``onnx-int8``, each optionally followed by ``+topN``
    (top_k=N per query; the floor shrinks with it) and ``+lenN`` (Labeler inputs cut to N tokens)."""
    out = {}
    for name in names:
        mode, *extras = name.split("+")
        if mode != "float" and mode not in MODES:
            raise SystemExit(f"unknown variant {name!r}: {USAGE}")
        ov = list(base) + ([f"quantize={mode}"] if mode in MODES else [])
        for extra in extras:
            if extra.startswith("top") and extra[3:].isdigit():
                k = int(extra[3:])
                ov = [o for o in ov if not o.startswith("top_k=")] + [f"top_k={k}"]
                floor = [int(o.split("=", 1)[1]) for o in ov if o.startswith("floor_k=")]
                if floor and floor[0] > k:
                    ov = [o for o in ov if not o.startswith("floor_k=")] + [f"floor_k={k}"]
            elif extra.startswith("len") and extra[3:].isdigit():
                ov = [o for o in ov if not o.startswith("labeler_max_length=")]
                ov.append(f"labeler_max_length={int(extra[3:])}")
            else:
                raise SystemExit(f"unknown variant {name!r}: {USAGE}")
        out[name] = ov
    return out


def build(pool: Any, models: Path, overrides: list[str]) -> Any:
    from efficientrag.config import load_config
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG

    cfg = load_config(
        EfficientRAGConfig,
        None,
        [
            *overrides,
            f"labeler={models / 'labeler' / 'best'}",
            f"filter={models / 'filter' / 'best'}",
            "device=cpu",
        ],
    )
    return EfficientRAG.from_config(pool.retriever, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", required=True, help="folder with labeler/best and filter/best")
    parser.add_argument("--shared-data", default=str(DEFAULT_SHARED))
    parser.add_argument(
        "--work-dir", default=None, help="pools/indexes (default: the models' protocol folder)"
    )
    parser.add_argument("--retriever", choices=("dense", "bm25", "hybrid"), default="bm25")
    parser.add_argument("--dataset", choices=DATASETS, default="hotpotqa")
    parser.add_argument("--limit", type=int, default=100, help="questions (the first N)")
    parser.add_argument(
        "--split",
        choices=("dev", "validation"),
        default="dev",
        help="dev questions to report, or the protocol's validation questions of the train file "
        "(where a faster variant is chosen)",
    )
    parser.add_argument("--slice", type=int, default=10, help="questions per timed slice")
    parser.add_argument("--variants", nargs="+", default=["float", "int8", "int8+top6"])
    parser.add_argument("--setting", nargs="*", default=None, help="EfficientRAG overrides (default: chosen)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: every core)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    import torch

    from efficientrag.cpu import available_cores
    from efficientrag.retrieval.metrics import mean_scores, score_retrieval

    torch.set_num_threads(args.threads or available_cores())
    models = Path(args.models)
    work = Path(args.work_dir) if args.work_dir else models.parents[1]
    base = list(args.setting) if args.setting is not None else chosen_setting(models)
    plans = variants(args.variants, base)
    opts = ProtocolOptions.from_args(args)
    if args.split == "dev":
        pool = open_pool(
            f"dev-{args.dataset}", [(args.dataset, DEV_FILES[args.dataset])], work / "pools", opts
        )
        examples = pool.examples[: args.limit]
    else:
        # The same pool and validation questions the protocol benchmark chose its setting on.
        pool = open_pool(
            f"train-{args.dataset}", [(args.dataset, TRAIN_FILES[args.dataset])], work / "pools", opts
        )
        examples = validation_examples(pool, quick_config(work, args.dataset, opts))[: args.limit]
    rags = {name: build(pool, models, ov) for name, ov in plans.items()}

    seconds = {name: {"labeler": 0.0, "filter": 0.0, "wall": 0.0} for name in plans}
    scores: dict[str, list] = {name: [] for name in plans}
    names = list(plans)
    slices = [examples[i : i + args.slice] for i in range(0, len(examples), args.slice)]
    for n, part in enumerate(slices):
        order = names[n % len(names) :] + names[: n % len(names)]
        for name in order:
            t0 = time.perf_counter()
            results = rags[name].retrieve_batch([ex.question for ex in part])
            seconds[name]["wall"] += time.perf_counter() - t0
            for ex, res in zip(part, results, strict=True):
                for hop in res.trace:
                    seconds[name]["labeler"] += hop.timings_s["labeler"]
                    seconds[name]["filter"] += hop.timings_s["filter"]
                scores[name].append(
                    score_retrieval(
                        res.chunk_ids, [c.contents for c in res.chunks], ex.gold_chunk_ids, ex.answers
                    )
                )
        if not args.quiet:
            print(f"slice {n + 1}/{len(slices)} done", file=sys.stderr)

    n_q = len(examples)
    ref = names[0]
    ref_scores, ref_sec = mean_scores(scores[ref]), seconds[ref]
    lines = [
        f"EfficientRAG CPU cost, {args.dataset} {args.split}, {n_q} questions, {args.retriever} retriever, "
        f"{torch.get_num_threads()} torch threads; setting: {' '.join(base)}",
        "",
        "| variant | Labeler s/q | Filter s/q | total s/q | Labeler speed-up | total speed-up "
        "| chunks | recall | all-gold | Δ recall | Δ all-gold |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        m, sec = mean_scores(scores[name]), seconds[name]
        lines.append(
            f"| {name} | {sec['labeler'] / n_q:.3f} | {sec['filter'] / n_q:.3f} | {sec['wall'] / n_q:.3f} "
            f"| {ref_sec['labeler'] / max(sec['labeler'], 1e-9):.2f}x | {ref_sec['wall'] / max(sec['wall'], 1e-9):.2f}x "
            f"| {m['num_chunks']:.2f} | {m['recall']:.2f} | {m['all_gold']:.2f} "
            f"| {m['recall'] - ref_scores['recall']:+.2f} | {m['all_gold'] - ref_scores['all_gold']:+.2f} |"
        )
    publish("\n".join(lines), None, rerun=command_line(__file__, argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
