"""The cross-encoder's early exit on toy worlds no model was trained on: ``rerank`` at full depth and
with the exit, the technique the Labeler's reranker gets in ``early_exit.py``, so the two rerankers
compare at equal technique.

The cross-encoder is one ``efficientrag train reranker`` trained on the quickstart's toy world (seed
0; the command below). Its exit heads (``efficientrag train exit-head --cross-encoder``) are fit to
its own logit on the Labeler's training rows (their words as pairs) and on the question's top
``--top-n`` hits of a third toy world (seed 3, no gold read), then:

1. The validation world (seed 1): ``rerank`` at full depth and at every ``--thresholds`` value; of
   the thresholds whose score ((recall + all-gold) / 2 at ``--k`` chunks) is within ``--tolerance``
   points of full depth, the one that runs the fewest encoder layers a question, else full depth
   (``adapt``'s rule, :func:`efficientrag.adapt.exit_choice.pick_threshold`).
2. The report world (seed 2), nothing chosen on it: full depth and the chosen threshold at ``--k``
   chunks, with paired 95% intervals, the pairs judged in full and left early, and seconds per
   question side by side (the first ``--time-sample`` questions, batches of 32, one warm-up batch
   each, in ``--quantize``).

    efficientrag train reranker retriever.kind=dense work_dir=runs/toy_reranker \\
        output_dir=runs/toy_reranker/model negatives=4 top_negatives=3 epochs=2 learning_rate=1e-4 eval_k=5
    python benchmarks/cross_encoder_exit.py --out docs/reports/cross_encoder_exit_toy.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from exit_options import exit_arguments, threshold_table_head
from report_output import publish, title_block

from efficientrag.adapt.exit_choice import pick_threshold
from efficientrag.baselines.rerank import Rerank, RerankConfig
from efficientrag.config import load_config
from efficientrag.errors import InvalidArgumentError
from efficientrag.eval.interrupts import main_reporting_interrupts
from efficientrag.eval.job_runs import evaluate_ranked_run
from efficientrag.eval.paired_bootstrap import paired_bootstrap
from efficientrag.eval.record_scores import mean, question_scores
from efficientrag.eval.side_by_side import time_methods
from efficientrag.experiment.assembly import toy_world_search
from efficientrag.fingerprint import folder_digest
from efficientrag.jsonl import read_jsonl
from efficientrag.models.cross_encoder import load_cross_encoder
from efficientrag.models.early_exit import EarlyExit, load_early_exit
from efficientrag.training.cross_encoder_exit import fit_cross_encoder_exit, pairs_from_rows
from efficientrag.training.data import read_rows
from efficientrag.training.exit_head import ExitHeadConfig

Record = dict[str, Any]
TIMING_BATCH = 32


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reranker", type=Path, default=Path("runs/toy_reranker/model/best"))
    exit_arguments(p, "questions' top hits")
    p.add_argument("--questions", type=int, default=150, help="questions per toy world")
    p.add_argument("--top-n", type=int, default=20, help="the question's hits reranked (N)")
    p.add_argument("--k", type=int, default=5, help="chunks kept and scored (K)")
    p.add_argument("--quantize", default="none", choices=("none", "bf16"), help="the cross-encoder's dtype")
    p.add_argument("--time-sample", type=int, default=64, help="questions timed per row (0: none)")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--work-dir", type=Path, default=Path("runs/bench_ce_exit"))
    p.add_argument("--out", type=Path, help="also write the report here (Markdown)")
    args = p.parse_args(argv)
    if min(args.questions, args.top_n, args.k) < 1 or args.time_sample < 0:
        p.error("--questions, --top-n and --k must be >= 1, --time-sample >= 0")
    return args


def fit_pairs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The Labeler's training rows as pairs, and each question of the fit world with its top N hits:
    the pairs the reranker judges (no gold read)."""
    pairs = pairs_from_rows(read_rows(args.rows, "labeler").rows)
    examples, search = toy_world_search(args.fit_seed, args.questions, args.work_dir)
    questions = [ex.question for ex in examples]
    hits = search.search(questions, args.top_n)
    return pairs + [(q, h.chunk.contents) for q, hs in zip(questions, hits, strict=True) for h in hs]


def ensure_heads(args: argparse.Namespace, cfg: ExitHeadConfig) -> EarlyExit:
    """The heads in the reranker's folder, fit again only when they were fit to other pairs or
    settings (their fit record keeps the digest of both)."""
    pairs = fit_pairs(args)
    key = hashlib.sha256(json.dumps([pairs, asdict(cfg)]).encode("utf-8")).hexdigest()[:16]
    try:
        heads = load_early_exit(args.reranker)
        if heads.fit.get("pairs_digest") == key:
            return heads
    except InvalidArgumentError:
        pass
    model = load_cross_encoder(args.reranker, device="cpu")
    heads = fit_cross_encoder_exit(model, pairs, cfg, show_progress=True)
    heads.fit["pairs_digest"] = key
    heads.save(args.reranker)
    return heads


def reranker(args: argparse.Namespace, search: Any, threshold: float | None) -> Rerank:
    cfg = RerankConfig(
        model=str(args.reranker),
        top_n=args.top_n,
        device="cpu",
        quantize=args.quantize,
        exit_threshold=threshold,
    )
    return Rerank(search, None, cfg)


def run(method: Rerank, examples: list, out: Path, k: int) -> list[Record]:
    evaluate_ranked_run(method, examples, out, ks=[k], progress=False)
    return list(read_jsonl(out / "predictions.jsonl"))


def at_k(records: list[Record], k: int) -> list[tuple[float, float]]:
    return question_scores(records, cut=lambda r: k)


def score(records: list[Record], k: int) -> float:
    return mean([(r + a) / 2 for r, a in at_k(records, k)])


def layers(records: list[Record], depth: int) -> float:
    """Encoder layers run a question: each pair's, read from the counters (full depth without an exit)."""
    return mean(
        [r["counters"].get("encoder_layers", r["counters"]["reranked_pairs"] * depth) for r in records]
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not (args.reranker / "config.json").is_file():
        sys.exit(
            f"{args.reranker}: no trained cross-encoder (the command in this script's docstring trains one)"
        )
    if not args.rows.is_file():
        sys.exit(f"--rows: no Labeler rows at {args.rows} (run `efficientrag quickstart`)")
    cfg = load_config(ExitHeadConfig, None, [f"layers=[{args.layers}]", f"quantile={args.quantile}"])
    heads = ensure_heads(args, cfg)
    depth = int(json.loads((args.reranker / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"])
    val_examples, val_search = toy_world_search(1, args.questions, args.work_dir)
    rows = {}
    for t in [None, *args.thresholds]:
        recs = run(
            reranker(args, val_search, t), val_examples, args.work_dir / "validation" / f"exit-{t}", args.k
        )
        rows[t] = {"score": score(recs, args.k), "layers": layers(recs, depth)}
    chosen = pick_threshold(rows, args.tolerance)
    examples, search = toy_world_search(2, args.questions, args.work_dir)
    report = {}
    for t in dict.fromkeys([None, chosen]):
        method = reranker(args, search, t)
        label = "rerank, full depth" if t is None else f"rerank, exit < {t:g}"
        report[label] = (method, run(method, examples, args.work_dir / "report" / f"exit-{t}", args.k))
    seconds = {}
    if args.time_sample:
        sample = examples[: args.time_sample]
        seconds = time_methods(
            {label: m.run_batch for label, (m, _) in report.items()}, sample, batch_size=TIMING_BATCH
        )
    publish("\n".join(render(args, heads, depth, rows, chosen, report, seconds)), args.out)
    return 0


def render(
    args: argparse.Namespace,
    heads: EarlyExit,
    depth: int,
    rows: dict[float | None, dict[str, float]],
    chosen: float | None,
    report: dict[str, tuple[Rerank, list[Record]]],
    seconds: dict[str, float],
) -> list[str]:
    lines = [
        *title_block(
            f"# The cross-encoder's early exit (toy worlds, seeds 1 / 2, {args.questions} questions each)",
            __file__,
        ),
        f"Cross-encoder {folder_digest(str(args.reranker))[:12]} ({depth} layers, `{args.reranker}`), exit heads "
        f"after layers {args.layers} fit on {heads.fit.get('rows')} pairs (`{args.rows}` and the top {args.top_n} "
        f"hits of world {args.fit_seed}) to its own logit, a pair leaving where the {args.quantile:g} quantile of "
        f"its estimated score is under the threshold. The question's top N = {args.top_n} reranked, K = {args.k} "
        f"kept. Threshold chosen on the validation world (seed 1) only: the fewest layers within "
        f"{args.tolerance:g} point(s) of full depth. Timed in `{args.quantize}`.",
        "",
        "Validation world: (recall + all-gold) / 2 at K, and encoder layers run per question.",
        "",
        *threshold_table_head(args.thresholds),
        "| "
        + " | ".join(
            f"{rows[t]['score']:.2f} ({rows[t]['layers']:.0f} layers)" for t in [None, *args.thresholds]
        )
        + f" | {'full depth' if chosen is None else f'{chosen:g}'} |",
        "",
        "Report world (seed 2), nothing chosen on it:",
        "",
        "| method | recall / all-gold at K | pairs in full / left early per q | encoder layers / q | s / q "
        "| vs full depth: recall [95%] | all-gold [95%] |",
        "|---|---|---|---|---|---|---|",
    ]
    full = at_k(report["rerank, full depth"][1], args.k)
    for label, (_, recs) in report.items():
        s = at_k(recs, args.k)
        left = mean([r["counters"].get("exited_pairs", 0.0) for r in recs])
        pairs = mean([r["counters"]["reranked_pairs"] for r in recs])
        secs = seconds.get(label)
        ref = seconds.get("rerank, full depth")
        timing = "not timed" if secs is None else f"{secs:.4f} ({secs / ref:.2f}x)"
        gaps = gap_cells(s, full, args.resamples) if label != "rerank, full depth" else ["", ""]
        lines.append(
            f"| {label} | {mean([x for x, _ in s]):.1f} / {mean([y for _, y in s]):.1f} | {pairs - left:.1f} / "
            f"{left:.1f} | {layers(recs, depth):.0f} | {timing} | {gaps[0]} | {gaps[1]} |"
        )
    return lines


def gap_cells(
    scores: list[tuple[float, float]], full: list[tuple[float, float]], resamples: int
) -> list[str]:
    """Paired 95% intervals of recall and all-gold against full depth, question by question."""
    return [
        paired_bootstrap([x[i] for x in scores], [x[i] for x in full], resamples=resamples).cell()
        for i in (0, 1)
    ]


if __name__ == "__main__":
    sys.exit(main_reporting_interrupts(main))
