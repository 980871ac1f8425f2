"""The Labeler's early exit on toy worlds no model was trained on: what it saves, what it loses.

The exit heads (``efficientrag train exit-head``) are fit to the Labeler's own outputs on its training
rows and on the pairs the full-depth containing loop judges on a third toy world (seed 3, no gold
read: the later hops' Filter queries are in no training row), then:

1. The validation world (seed 1): the loop that contains its Labeler as a reranker
   (``budget_policy=rerank``, first hop of the reranker's N) runs at full depth; ``hop_calibration``
   (with the search's rank) is fitted on its traces, as ``rerank_containment.py`` does. The
   calibrated loop's Labeler pairs are chosen at full depth by ``adapt``'s rule
   (:mod:`efficientrag.adapt.pair_choice`: later hops of ``--widths`` hits, caps of
   ``--pair-budgets``; the fewest pairs within ``--tolerance`` of the best), and when a cheaper
   variant is picked it becomes a third method. The calibrated loop, that variant and their one-hop
   reranker (``labeler_rerank``, ``adapt``'s derivation) then run at every ``--thresholds`` value; each method takes, of the thresholds whose validation score
   ((recall + all-gold) / 2) is within ``--tolerance`` points of its own full-depth score, the one
   that runs the fewest encoder layers, else full depth (``adapt``'s rule,
   :func:`efficientrag.adapt.exit_choice.pick_threshold`).
2. The report world (seed 2), nothing chosen on it: each method at full depth and at its chosen
   threshold, with paired 95% intervals against today's full-depth ``labeler_rerank`` and against
   its own full depth, the pairs judged in full and the pairs that left early per question, and the
   heads' error: the share of the full-depth run's kept chunks that left early in the exit run.
3. Seconds per question, every row timed side by side in this process on the report world's
   first ``--time-sample`` questions (batches of 32, each run by every row in a rotating order,
   models loaded first, one warm-up batch each),
   in the dtype ``--quantize`` names; the ratio to full-depth ``labeler_rerank`` beside each.

    python benchmarks/early_exit.py                      # after `efficientrag quickstart`
    python benchmarks/early_exit.py --quantize bf16 --out docs/reports/early_exit_toy.md

Runs are cached (fingerprinted, the heads' digest included) under ``--work-dir``; the heads are
fit again only when those beside the Labeler were fit to other rows or settings.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from exit_options import (
    exit_arguments,
    kept_lost_early,
    pair_cell,
    paired_cells,
    threshold_table_head,
    time_loops,
)
from report_output import publish, quickstart_models, title_block

from efficientrag.adapt.exit_choice import layer_cost, pick_threshold
from efficientrag.adapt.method_choice import LABELER_RERANK, rerank_settings
from efficientrag.adapt.pair_choice import AS_CHOSEN, PairChoiceConfig, pair_candidates, pick_fewest_pairs
from efficientrag.config import load_config
from efficientrag.eval.interrupts import main_reporting_interrupts
from efficientrag.eval.job_runs import evaluate_efficientrag_run
from efficientrag.eval.record_scores import mean, question_scores
from efficientrag.experiment.assembly import toy_world_search
from efficientrag.fingerprint import folder_digest
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.models.early_exit import encoder_depth
from efficientrag.pipeline.budget import judgements_from_trace
from efficientrag.pipeline.calibration import fit_hop_calibration, judged_items
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.text.words import split_words
from efficientrag.training.exit_head import (
    REPORTED_THRESHOLDS,
    ExitHeadConfig,
    ensure_exit_heads,
    rows_from_traces,
)

Record = dict[str, Any]
METHODS = ("labeler_rerank", "loop_rerank_calibrated")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=Path, default=Path("runs/quickstart/models"))
    exit_arguments(p, "loop pairs")
    p.add_argument("--work-dir", type=Path, default=Path("runs/bench_early_exit"))
    p.add_argument("--questions", type=int, default=150, help="questions per toy world")
    p.add_argument("--budget", type=int, default=5, help="chunks per question (the reranker's K)")
    p.add_argument("--first-top-k", type=int, default=20, help="the reranker's N")
    p.add_argument("--widths", type=int, nargs="*", default=[6, 4], help="later hops' top_k candidates")
    p.add_argument("--pair-budgets", type=int, nargs="*", default=[30, 25], help="pair_budget candidates")
    p.add_argument("--quantize", default="none", help="the models' inference path while timed")
    p.add_argument("--time-sample", type=int, default=64, help="questions timed per row (0: none)")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--out", type=Path, help="also write the report here (Markdown)")
    args = p.parse_args(argv)
    if min(args.questions, args.budget, args.first_top_k) < 1 or args.time_sample < 0:
        p.error("--questions, --budget and --first-top-k must be >= 1, --time-sample >= 0")
    return args


def loop_pairs(args: argparse.Namespace, contained: EfficientRAGConfig) -> Path:
    """The pairs the full-depth containing loop judges on a world of its own (``--fit-seed``: no
    gold read, neither the validation nor the report world), as Labeler rows for the heads: its
    later hops read the Filter's queries, which the Labeler's training rows do not hold."""
    world = toy_world_search(args.fit_seed, args.questions, args.work_dir)
    records = run(contained, world, args.work_dir / "fit-world" / "rerank-raw")
    corpus = {chunk.id: chunk for chunk in world[1].corpus}
    rows = rows_from_traces(records, lambda cid: split_words(corpus[cid].contents))
    out = args.work_dir / "fit-world" / "loop_pairs.jsonl"
    write_jsonl(out, [row.to_dict() for row in rows])
    return out


def run(cfg: EfficientRAGConfig, world: tuple[list, Any], out: Path) -> list[Record]:
    examples, search = world
    evaluate_efficientrag_run(cfg, search, examples, out, progress=False)
    return list(read_jsonl(out / "predictions.jsonl"))


def protocol(records: Sequence[Record]) -> float:
    """(recall + all-gold) / 2, in %."""
    return mean([(r + a) / 2 for r, a in question_scores(records)])


def _counters(records: Sequence[Record]) -> list[dict[str, float]]:
    return [r.get("counters") or {} for r in records]


def folder_name(method: str) -> str:
    """A method's runs' folder name (its label without spaces or brackets)."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in method).strip("_")


def choose_pairs_on(
    args: argparse.Namespace, calibrated: EfficientRAGConfig, world: tuple[list, Any]
) -> dict[str, Any]:
    """The calibrated loop's Labeler pairs chosen on the validation world at full depth, by
    ``adapt``'s rule (:mod:`efficientrag.adapt.pair_choice`): each candidate's score and pairs, the pick
    and its settings."""
    cfg = PairChoiceConfig(
        enabled=True, widths=args.widths, budgets=args.pair_budgets, tolerance=args.tolerance
    )
    candidates = pair_candidates(calibrated, cfg)
    rows = {}
    for name, settings in candidates.items():
        # The loop as chosen is the threshold choice's full-depth run: one folder for both.
        folder = METHODS[1] + "/exit-None" if name == AS_CHOSEN else "pairs/" + folder_name(name)
        recs = run(settings, world, args.work_dir / "validation" / folder)
        rows[name] = {"score": protocol(recs), "pairs": mean([c["labeler_pairs"] for c in _counters(recs)])}
    pick = pick_fewest_pairs(rows, args.tolerance)
    return {"rows": rows, "chosen": pick, "settings": candidates[pick]}


def choose_thresholds(
    args: argparse.Namespace, bases: dict[str, EfficientRAGConfig], world: tuple[list, Any], depth: int
) -> dict[str, dict[str, Any]]:
    """Per method: each threshold's validation score and layer cost, and the chosen threshold."""
    out = {}
    for name, base in bases.items():
        rows = {}
        for t in [None, *args.thresholds]:
            recs = run(
                replace(base, exit_threshold=t),
                world,
                args.work_dir / "validation" / folder_name(name) / f"exit-{t}",
            )
            rows[t] = {"score": protocol(recs), "layers": layer_cost(recs, depth)}
        out[name] = {"rows": rows, "chosen": pick_threshold(rows, args.tolerance)}
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    labeler, filter_ = quickstart_models(args.models)
    if not args.rows.is_file():
        sys.exit(f"--rows: no Labeler rows at {args.rows}")
    head_cfg = load_config(ExitHeadConfig, None, [f"layers=[{args.layers}]", f"quantile={args.quantile}"])
    base = EfficientRAGConfig(labeler=str(labeler), filter=str(filter_))
    contained = replace(base, first_top_k=args.first_top_k, chunk_budget=args.budget, budget_policy="rerank")
    fit = ensure_exit_heads(labeler, [args.rows, loop_pairs(args, contained)], head_cfg, show_progress=True)
    depth = encoder_depth(labeler)
    val_world = toy_world_search(1, args.questions, args.work_dir)
    raw = run(contained, val_world, args.work_dir / "validation" / "rerank-raw")
    judged = [
        item
        for r in raw
        for item in judged_items(
            judgements_from_trace(r["trace"]["hops"]).by_hop,
            r["gold_chunk_ids"],
            judgements_from_trace(r["trace"]["hops"]).rank_by_hop,
        )
    ]
    calibration = fit_hop_calibration(judged, max_hops=base.max_hops, with_rank=True)
    calibrated = replace(contained, hop_calibration=calibration)
    bases = {
        METHODS[0]: rerank_settings(calibrated, args.budget, args.first_top_k)[LABELER_RERANK],
        METHODS[1]: calibrated,
    }
    pairs = choose_pairs_on(args, calibrated, val_world)
    if pairs["chosen"] != AS_CHOSEN:
        bases[f"{METHODS[1]} ({pairs['chosen']})"] = pairs["settings"]
    choice = choose_thresholds(args, bases, val_world, depth)

    report_world = toy_world_search(2, args.questions, args.work_dir)
    rows: dict[str, tuple[EfficientRAGConfig, list[Record]]] = {}
    for name, base in bases.items():
        for t in (None, choice[name]["chosen"]):
            label = f"{name}, full depth" if t is None else f"{name}, exit < {t:g}"
            cfg = replace(base, exit_threshold=t)
            if label not in rows:
                out = args.work_dir / "report" / folder_name(name) / f"exit-{t}"
                rows[label] = (cfg, run(cfg, report_world, out))
    seconds = {}
    if args.time_sample:
        sample = [ex.question for ex in report_world[0][: args.time_sample]]
        seconds = time_loops({n: cfg for n, (cfg, _) in rows.items()}, report_world[1], sample, args.quantize)
    text = "\n".join(render(args, fit, depth, choice, rows, seconds, labeler, pairs))
    publish(text, args.out)
    return 0


def render(
    args: argparse.Namespace,
    fit: dict[str, Any],
    depth: int,
    choice: dict[str, dict[str, Any]],
    rows: dict[str, tuple[EfficientRAGConfig, list[Record]]],
    seconds: dict[str, float],
    labeler: Path,
    pairs: dict[str, Any],
) -> list[str]:
    pair_cells = ", ".join(
        f"{n} {r['score']:.2f} at {r['pairs']:.1f} pairs" for n, r in pairs["rows"].items()
    )
    lines = [
        *title_block(
            f"# The Labeler's early exit (toy worlds, seeds 1 / 2, {args.questions} questions each)", __file__
        ),
        f"Labeler {folder_digest(str(labeler))[:12]} ({depth} layers), exit heads after layers {args.layers}, fit "
        f"on {fit.get('rows')} rows (`{args.rows}` and the loop's pairs on world {args.fit_seed}; digest "
        f"{fit.get('rows_digest')}) to the Labeler's own "
        f"Continue logit, a pair leaving where the {args.quantile:g} quantile of its estimate is under the threshold. "
        f"Budget K = {args.budget}, the reranker's N = {args.first_top_k}; `hop_calibration` (with rank) fitted "
        "on the validation world's full-depth traces. Thresholds chosen on the validation world (seed 1) only: "
        f"the fewest layers within {args.tolerance:g} point(s) of the method's full-depth score. Timed in "
        f"`{args.quantize}`.",
        "",
        "Held-out rows of the fit, per exit layer: the expected logit's error and rank agreement, how often the "
        "full logit is under the upper one, and per threshold the share of pairs that would leave there / the "
        "share of the Labeler's Continue pairs among them:",
        "",
        "| layer | logit error | rank agreement | upper covers | "
        + " | ".join(f"< {t:g}" for t in REPORTED_THRESHOLDS)
        + " |",
        "|---|---|---|---|" + "---|" * len(REPORTED_THRESHOLDS),
    ]
    for layer, part in fit["layers"].items():
        held = part.get("held_out") or part["train"]
        cells = [
            f"{100 * held['by_threshold'][str(t)]['exits']:.0f}% / {100 * held['by_threshold'][str(t)]['continue_lost']:.1f}%"
            for t in REPORTED_THRESHOLDS
        ]
        lines.append(
            f"| {layer} | {held['logit_mae']} | {held['rank_agreement']} | {100 * held['upper_coverage']:.0f}% | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        f"The calibrated loop's Labeler pairs, chosen on the validation world at full depth (`adapt`'s rule: the "
        f"fewest pairs a question within {args.tolerance:g} point(s) of the best candidate): **{pairs['chosen']}** "
        f"({pair_cells}).",
        "",
        "Validation world: (recall + all-gold) / 2, and encoder layers run per question.",
        "",
        *threshold_table_head(args.thresholds, "method"),
    ]
    for name in choice:
        cells = [_val_cell(choice[name]["rows"][t]) for t in [None, *args.thresholds]]
        chosen = choice[name]["chosen"]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {'full depth' if chosen is None else f'{chosen:g}'} |"
        )
    return lines + report_lines(args, rows, seconds)


def _val_cell(row: dict[str, float]) -> str:
    return f"{row['score']:.2f} ({row['layers']:.0f} layers)"


def report_lines(
    args: argparse.Namespace,
    rows: dict[str, tuple[EfficientRAGConfig, list[Record]]],
    seconds: dict[str, float],
) -> list[str]:
    ref_name = "labeler_rerank, full depth"
    ref = question_scores(rows[ref_name][1])
    today_name = f"{METHODS[1]}, full depth"
    today = question_scores(rows[today_name][1])
    lines = [
        "",
        "Report world (seed 2), nothing chosen on it:",
        "",
        "| method | recall / all-gold | chunks | pairs in full / left early per q (median in full) | s / q | "
        "vs full-depth labeler_rerank: recall [95%] | all-gold [95%] | vs its own full depth: recall | all-gold | "
        "vs the calibrated loop at full width and depth: recall | all-gold | kept chunks lost early |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, (_, recs) in rows.items():
        s = question_scores(recs)
        own = question_scores(rows[label.split(",")[0] + ", full depth"][1])
        secs = seconds.get(label)
        timing = "not timed" if secs is None else f"{secs:.3f} ({secs / seconds[ref_name]:.2f}x)"
        full_name = label.split(",")[0] + ", full depth"
        lost = "" if label == full_name else f"{kept_lost_early(rows[full_name][1], recs):.1f}%"
        cells = [
            f"{mean([x for x, _ in s]):.1f} / {mean([y for _, y in s]):.1f}",
            f"{mean([len(r['retrieved_ids']) for r in recs]):.2f}",
            pair_cell(recs),
            timing,
            *(["", ""] if label == ref_name else paired_cells(s, ref, args.resamples)),
            *(["", ""] if label == full_name else paired_cells(s, own, args.resamples)),
            *(
                ["", ""]
                if label == today_name or label.startswith(METHODS[0])
                else paired_cells(s, today, args.resamples)
            ),
            lost,
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    sys.exit(main_reporting_interrupts(main))
