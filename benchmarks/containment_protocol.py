"""The loop that contains its Labeler as a reranker, under the honest protocol, on every dev set.

``efficientrag adapt`` chooses among the Labeler as a one-hop reranker, the loop, and the loop that
contains that reranker (``efficientrag.adapt.method_choice``) on a new corpus's pseudo-questions.
This script makes the same choice for one protocol direction without adapting anything, on the
validation questions of its training files, and then runs every candidate on each dev set:

1. The direction's Labeler and Filter and its loop setting, as ``retrieval_efficientrag.py`` trained
   and chose them (cached in, and shared with, its work folder).
2. On the validation questions of every training file (each over its own corpus): the candidates
   ``labeler_rerank`` (the Labeler judging the question's top 20, one hop), ``loop`` (the chosen
   setting), ``loop_rerank`` (the loop whose first hop is that reranker and whose later hops enter
   the chunk budget only by outscoring a kept chunk) and ``loop_rerank_calibrated`` (the same with
   per-hop calibration, cross-fitted for its score), at the setting's chunk budget; the best score
   is the method chosen.
3. On every dev question of each ``--eval-on`` set (in domain or left out), and with ``--open-domain
   N`` on 2Wiki open-domain train questions none was trained on: every candidate, with paired 95%
   intervals against ``labeler_rerank`` and against the search's own top 10, on all questions and on
   the part held back from design. Dev questions choose nothing. With ``--pair-budgets``, the chosen
   loop again under each cap on Labeler pairs a question (``pair_budget``): trade-off rows, not
   candidates. With ``--choose-pairs``, the chosen loop's later hops' width and pair cap chosen on
   the same validation questions by ``adapt``'s rule (``efficientrag.adapt.pair_choice``: the fewest
   Labeler pairs a question within 1 point of the best), its dev row beside the chosen method's.
   With ``--early-exit``, the Labeler's exit heads fit as ``adapt`` fits them (its training rows and
   the pairs the shipped method judges on half of the validation questions) and, for
   ``labeler_rerank``, the chosen method and the pair choice's pick, the exit threshold chosen on
   the other half (:mod:`efficientrag.adapt.exit_choice`: the fewest encoder layers within 1 point
   of full depth; where none is, the best-scoring threshold is still shown, marked not chosen);
   each dev set then gets a table of those rows at full depth and with the exit:
   pairs judged in full and left early, the kept chunks the exit lost, paired intervals against
   their own full depth, and seconds a question timed side by side in ``--quantize`` on the set's
   first ``--time-sample`` questions.
4. With ``--target-pseudo``, the same choice made on ``adapt``'s pseudo-questions over each left-out
   dev set's corpus (title-link chains and single paragraphs; no question or gold of the dev file):
   what a user adapting to that corpus would have been handed, reported beside the validation
   questions' choice. It changes neither the choice nor the dev rows.

    python benchmarks/containment_protocol.py --retriever bm25 --train-on 2wikimultihopqa,musique \\
        --open-domain 200 --out docs/reports/containment/bm25_2wikimultihopqa+musique.md

Every run is a resumable folder under the direction's models (``method_choice/`` and
``dev-containment/``), fingerprinted by its models' weights and settings: a rerun redoes only what is
missing, and one under other models or settings is redone.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from adaptation_methods import choice_lines, dev_section, evaluate_on_dev
from exit_options import kept_lost_early, pair_cell, paired_cells, threshold_argument, time_loops
from report_output import command_line, publish
from retrieval_efficientrag import (
    DEV_FILES,
    ProtocolOptions,
    choose,
    dataset_names,
    open_pool,
    parse_protocol_args,
    protocol_parser,
    quick_config,
    train,
)
from retrieval_efficientrag import validation_examples as validation_part
from retrieval_rerank import OPEN_DOMAIN_NAME, direction_arguments, open_domain_pool

from efficientrag.adapt.choice import VALIDATION_GROUP, Judge, ScoringSet
from efficientrag.adapt.exit_choice import ExitChoiceConfig, fit_method_heads, layer_cost, score_thresholds
from efficientrag.adapt.method_choice import LABELER_RERANK, MethodChoiceConfig, choose_method
from efficientrag.adapt.pair_choice import AS_CHOSEN, PairChoiceConfig, choose_pairs
from efficientrag.adapt.pseudo_rows import PseudoRowsConfig, build_pseudo_sets, pseudo_scoring_sets
from efficientrag.config import load_config, save_config
from efficientrag.config_values import to_dict
from efficientrag.eval.record_scores import mean, question_scores
from efficientrag.fingerprint import folder_digest
from efficientrag.models.early_exit import encoder_depth
from efficientrag.pipeline.config import EfficientRAGConfig


def direction_models(models: Path) -> dict[str, Path]:
    """The direction's trained Labeler and Filter folders, checked to hold weights."""
    folders = {"labeler": models / "labeler" / "best", "filter": models / "filter" / "best"}
    for name, folder in folders.items():
        if not (folder / "model.safetensors").is_file():
            raise SystemExit(f"{folder}: no trained {name} (retrieval_efficientrag.py trains it)")
    return folders


def scoring_sets(opts: ProtocolOptions, work: Path, pools: dict[str, Any]) -> list[ScoringSet]:
    """The validation part of each training file, over that file's own corpus."""
    return [
        ScoringSet(
            name, VALIDATION_GROUP, pool.retriever, validation_part(pool, quick_config(work, name, opts))
        )
        for name, pool in pools.items()
    ]


def target_pseudo_sets(
    pools: dict[str, Any], train_on: list[str], progress: bool, cfg: PseudoRowsConfig | None = None
) -> list[ScoringSet]:
    """``adapt``'s pseudo-questions (``cfg``; None: adapt's defaults) over each left-out dev set's
    corpus, as the pseudo group's scoring sets, named after the set."""
    cfg = cfg or PseudoRowsConfig()
    sets = []
    for name, pool in pools.items():
        if name in train_on or name == OPEN_DOMAIN_NAME:
            continue
        made = build_pseudo_sets(pool.corpus, pool.retriever, cfg, progress=progress)
        sets += pseudo_scoring_sets(made.validation_questions, pool.retriever, prefix=f"{name} ")
    return sets


def dev_pools(opts: ProtocolOptions, work: Path, train_on: list[str], eval_on: list[str]) -> dict[str, Any]:
    """Each ``eval_on`` dev set over its own corpus, and the open-domain set when asked for."""
    pools = {
        name: open_pool(f"dev-{name}", [(name, DEV_FILES[name])], work / "pools", opts) for name in eval_on
    }
    if opts.open_domain:
        pools[OPEN_DOMAIN_NAME] = open_domain_pool(opts, work, train_on)
    return pools


def with_pair_budgets(method: dict[str, Any], budgets: list[int]) -> dict[str, Any]:
    """``method`` with the chosen loop again under each Labeler pair budget, as trade-off rows for the
    dev tables (chosen by nothing; the choice's own table is unchanged). A chosen one-hop reranker
    gets none: its pairs are its N already."""
    chosen = method["candidates"][method["chosen"]]["efficientrag"]
    if not budgets or chosen.get("max_hops", 2) == 1:
        return method
    extra = {
        f"{method['chosen']}, pair_budget={p}": {"efficientrag": {**chosen, "pair_budget": p}}
        for p in budgets
    }
    return {**method, "candidates": {**method["candidates"], **extra}}


def pair_choice_rows(
    method: dict[str, Any], picked: EfficientRAGConfig, record: dict[str, Any]
) -> dict[str, Any]:
    """The dev row of the variant the pair choice (``adapt.pair_choice``, ``record``) picked on the
    same validation questions, to sit beside the chosen method's own; none when the method as chosen
    was kept."""
    if record["chosen"] == AS_CHOSEN:
        return {}
    return {pair_label(method["chosen"], record["chosen"]): {"efficientrag": to_dict(picked)}}


def pair_label(method: str, pick: str) -> str:
    """The dev row of ``method`` with the pair choice's ``pick``."""
    return f"{method}, {pick} (pairs chosen on validation)"


def with_dev_rows(method: dict[str, Any], rows: dict[str, Any]) -> dict[str, Any]:
    """``method`` with ``rows`` among its candidates, for the dev tables only: the choice's own
    table is rendered from ``method`` itself."""
    return {**method, "candidates": {**method["candidates"], **rows}}


def shipped(method: dict[str, Any], on_dev: dict[str, Any]) -> EfficientRAGConfig:
    """The settings ``adapt`` would hand a user for this choice: the chosen method, with the pair
    choice's pick and the exit threshold chosen for it where they were made."""
    name = method["chosen"]
    pairs = method.get("pairs", {})
    if pairs.get("chosen", AS_CHOSEN) != AS_CHOSEN:
        name = pair_label(name, pairs["chosen"])
    threshold = method.get("early_exit", {}).get("methods", {}).get(name, {}).get("chosen")
    if threshold is not None:
        name = exit_label(name, threshold)
    return load_config(EfficientRAGConfig, data=on_dev["candidates"][name]["efficientrag"])


def write_preset(retriever: str, settings: EfficientRAGConfig, path: Path) -> Path:
    """``settings`` and the search as a preset ``efficientrag retrieve``, ``eval`` and ``serve`` read
    with ``-c`` (as ``adapt``'s ``retrieve.yaml``)."""
    from efficientrag.retrieval.config import RetrieverConfig

    save_config({"retriever": RetrieverConfig(kind=retriever), "efficientrag": settings}, path)
    return path


def exit_label(name: str, threshold: float) -> str:
    """The dev row of ``name`` with its exit at ``threshold``."""
    return f"{name}, exit < {threshold:g}"


def choose_exits(
    cfg: ExitChoiceConfig, judge: Judge, models: dict[str, Path], root: Path, bases: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Labeler's exit heads fit as ``adapt`` fits them, on its training rows and the pairs of
    the last of ``bases`` (the method ``adapt`` would ship) on half of the validation questions;
    then each base's threshold chosen on the other half.

    Args:
        cfg: The heads' fit, the candidate thresholds and the tolerance (``adapt``'s settings).
        judge: The validation questions' scoring sets.
        models: The direction's Labeler and Filter.
        root: The direction's models folder (its ``train_data`` and the exit's work folder).
        bases: Row name -> its ``efficientrag`` settings (a dict, as the method choice records them).

    Returns:
        The record (heads and every base's candidates) and the dev rows of each base with its exit.
    """
    settings = {n: load_config(EfficientRAGConfig, data=d) for n, d in bases.items()}
    rows_file = root / "train_data" / "labeler" / "train.jsonl"
    fit = fit_method_heads(
        judge, models, list(settings.values())[-1], rows_file, cfg.heads, root / "early_exit"
    )
    record: dict[str, Any] = {"heads": fit, "methods": {}}
    dev_rows = {}
    for name, method in settings.items():
        chosen, scored = score_thresholds(judge, models, method, cfg.thresholds, cfg.tolerance)
        shown = chosen if chosen is not None else best_exit(scored)
        record["methods"][name] = {"chosen": chosen, "shown": shown, "candidates": scored}
    for label, (name, threshold) in exit_rows(record).items():
        if threshold is not None:
            dev_rows[label] = {"efficientrag": to_dict(replace(settings[name], exit_threshold=threshold))}
    return record, dev_rows


def best_exit(scored: dict[float | None, dict[str, float]]) -> float:
    """The threshold whose validation score is highest (the higher threshold on a tie): the exit
    shown on dev beside a method kept at full depth, so each method's full-depth and early-exit
    rows stand side by side, at equal technique."""
    return max((t for t in scored if t is not None), key=lambda t: (scored[t]["score"], t))


def exit_rows(record: dict[str, Any]) -> dict[str, tuple[str, float | None]]:
    """The exit's dev rows: each method at full depth (threshold None) and at the threshold shown
    for it, that row marked when validation did not choose it. Row label -> (method, threshold)."""
    rows: dict[str, tuple[str, float | None]] = {}
    for name, part in record["methods"].items():
        rows[name] = (name, None)
        mark = "" if part["chosen"] is not None else " (not chosen)"
        rows[exit_label(name, part["shown"]) + mark] = (name, part["shown"])
    return rows


def exit_choice_lines(record: dict[str, Any], depth: int) -> list[str]:
    """The exit's choice on the validation questions: the heads' fit, then per method each
    threshold's score and encoder layers a question on the half the heads never saw."""
    heads = record["heads"]
    first = next(iter(record["methods"].values()))["candidates"]
    lines = [
        f"The Labeler's exit heads (after layers {heads.get('settings', {}).get('layers')} of {depth}) fit on "
        f"{heads.get('rows')} rows (its training rows and the shipped method's pairs on half of the validation "
        "questions); each threshold scored on the other half, (recall + all-gold) / 2 and encoder layers a "
        "question; chosen: the fewest layers within 1 point of full depth.",
        "",
        "| method | "
        + " | ".join("full depth" if t is None else f"exit < {t:g}" for t in first)
        + " | chosen |",
        "|---|" + "---|" * (len(first) + 1),
    ]
    for name, part in record["methods"].items():
        cells = [f"{v['score']:.2f} ({v['layers']:.0f})" for v in part["candidates"].values()]
        chosen = "full depth" if part["chosen"] is None else f"{part['chosen']:g}"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {chosen} |")
    return lines


def exit_section(
    args: argparse.Namespace, method: dict[str, Any], exits: dict[str, Any], pool: Any, out: Path
) -> list[str]:
    """Each exit base at full depth and with its exit on one dev set (:func:`exit_rows`; its runs
    read back from ``out``, where the dev table put them), timed side by side in ``--quantize``."""
    runs = evaluate_on_dev(method, pool.retriever, pool.examples, out)
    rows = {label: name for label, (name, _) in exit_rows(exits).items()}
    settings = {
        n: load_config(EfficientRAGConfig, data=method["candidates"][n]["efficientrag"]) for n in rows
    }
    sample = [ex.question for ex in pool.examples[: args.time_sample]]
    seconds = time_loops(settings, pool.retriever, sample, args.quantize) if sample else {}
    depth = encoder_depth(Path(next(iter(settings.values())).labeler))
    ref = seconds.get(LABELER_RERANK)
    lines = [
        f"The exit on this set's questions (seconds: the first {len(sample)} questions, every row timed side by "
        f"side in `{args.quantize}`, batches of 32 in a rotating order):",
        "",
        "| method | recall / all-gold | pairs in full / left early (median in full) | encoder layers / q | "
        "kept chunks lost early | s / q | vs full-depth labeler_rerank | vs its own full depth: recall [95%] | "
        "all-gold [95%] |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, base in rows.items():
        recs, own = runs[label], runs[base]
        s = question_scores(recs)
        gaps = ["", ""] if label == base else paired_cells(s, question_scores(own))
        secs = seconds.get(label)
        cells = [
            f"{mean([x for x, _ in s]):.1f} / {mean([y for _, y in s]):.1f}",
            pair_cell(recs),
            f"{layer_cost(recs, depth):.0f}",
            "" if label == base else f"{kept_lost_early(own, recs):.1f}%",
            "not timed" if secs is None else f"{secs:.3f}",
            "" if secs is None or not ref else f"{secs / ref:.2f}x",
            *gaps,
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def pair_lines(record: dict[str, Any]) -> list[str]:
    """What the pair choice picked and every candidate's score and pairs, for the report."""
    if "candidates" not in record:
        return [f"Labeler pairs: the method as chosen ({record.get('why', 'nothing to choose')})."]
    cells = ", ".join(
        f"{n} {r['score']:.2f} at {r['pairs']:.1f} pairs" for n, r in record["candidates"].items()
    )
    return [
        f"Labeler pairs, chosen on the same validation questions: **{record['chosen']}** (the fewest pairs a "
        f"question within {record['tolerance']:g} point of the best candidate; {cells})."
    ]


def _slug(name: str, pool: Any) -> str:
    return "-".join(name.split()) + f"-{len(pool.examples)}"


def report(
    args: argparse.Namespace,
    train_on: list[str],
    setting: tuple[str, list[str]],
    models: dict[str, Path],
    methods: tuple[dict[str, Any], dict[str, Any] | None],
    sections: dict[str, list[str]],
    minutes: float,
    command: str,
) -> str:
    label, _ = setting
    lines = [
        f"# The loop containing its reranker: {args.retriever}, trained on {' + '.join(train_on)}",
        "",
        "    " + command,
        "",
        f"Models: Labeler {folder_digest(str(models['labeler']))[:12]}, Filter "
        f"{folder_digest(str(models['filter']))[:12]}; the loop's setting `{label}` (chosen on the same "
        f"validation questions by `retrieval_efficientrag.py`). The method was chosen on the validation "
        f"questions of the training files; the dev questions below chose nothing. This call took "
        f"{minutes:.1f} minutes; runs it found made by an earlier call are not counted.",
        "",
    ]
    method, pseudo = methods
    lines += [*choice_lines(method, "the training files' validation questions"), ""]
    if "pairs" in method:
        lines += [*pair_lines(method["pairs"]), ""]
    if "early_exit" in method:
        lines += [*exit_choice_lines(method["early_exit"], encoder_depth(models["labeler"])), ""]
    if "preset" in method:
        preset = Path(method["preset"])
        shown = preset.relative_to(Path.cwd()) if preset.is_relative_to(Path.cwd()) else preset
        lines += [
            f"The method a user would be handed, as a preset for `efficientrag serve -c`: `{shown}`.",
            "",
        ]
    if pseudo is not None:
        lines += [
            *choice_lines(pseudo, "`adapt`'s pseudo-questions over the left-out sets' corpora"),
            "",
            f"On the left-out corpora's pseudo-questions `adapt` would have chosen `{pseudo['chosen']}`; "
            f"the training files' validation questions chose `{method['chosen']}`, the method the dev "
            "rows below mark as chosen.",
            "",
        ]
    for name, body in sections.items():
        where = "in domain" if name.split()[0] in train_on else "left out"
        lines += [f"## {name} ({where})", "", *body, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = protocol_parser(__doc__)
    direction_arguments(parser)
    parser.add_argument("--rerank-top-k", type=int, default=20, help="the reranker's N: the first hop's hits")
    parser.add_argument(
        "--pair-budgets",
        type=int,
        nargs="*",
        default=[],
        metavar="P",
        help="also run the chosen loop on dev with at most P Labeler pairs a question (trade-off rows)",
    )
    parser.add_argument(
        "--choose-pairs",
        action="store_true",
        help="also choose the chosen loop's later hops' width and pair cap on the validation questions "
        "(adapt's rule: the fewest Labeler pairs within 1 point of the best), reported as one more dev row",
    )
    parser.add_argument(
        "--early-exit",
        action="store_true",
        help="also fit the Labeler's exit heads, choose each method's exit threshold on the validation questions "
        "and report the dev rows at full depth and with the exit, timed side by side",
    )
    threshold_argument(parser)
    parser.add_argument(
        "--quantize", default="bf16", help="the models' inference path while the exit rows are timed"
    )
    parser.add_argument(
        "--time-sample", type=int, default=64, help="dev questions a set timed per exit row (0: none)"
    )
    parser.add_argument(
        "--target-pseudo",
        action="store_true",
        help="also report the choice adapt's pseudo-questions over the left-out dev corpora would make",
    )
    parser.add_argument("--out", type=Path, help="also write the report here (Markdown)")
    args = parse_protocol_args(parser, argv)
    if args.rerank_top_k < 1 or args.open_domain < 0 or args.time_sample < 0:
        parser.error("--rerank-top-k must be >= 1, --open-domain and --time-sample >= 0")
    if any(p < args.rerank_top_k for p in args.pair_budgets):
        parser.error(f"--pair-budgets must cover the first hop's {args.rerank_top_k} pairs")
    t0 = time.perf_counter()
    work = Path(args.work_dir) / args.retriever
    train_on, eval_on = dataset_names(parser, args.train_on), dataset_names(parser, args.eval_on)
    if args.target_pseudo and set(eval_on) <= set(train_on):
        parser.error("--target-pseudo needs a left-out set among --eval-on")
    opts = ProtocolOptions.from_args(args)
    root, _, pools = train(opts, work, train_on)
    label, overrides, _ = choose(opts, work, root, pools)
    models = direction_models(root)
    loop = load_config(EfficientRAGConfig, None, overrides)
    choice = MethodChoiceConfig(rerank_top_k=args.rerank_top_k)
    judge = Judge(scoring_sets(opts, work, pools), loop, root / "method_choice", progress=not args.quiet)
    chosen, method = choose_method(judge, models, loop, choice)
    rows: dict[str, Any] = {}
    if args.choose_pairs:
        picked, pairs = choose_pairs(judge, models, chosen, PairChoiceConfig(enabled=True))
        method = {**method, "pairs": pairs}
        rows |= pair_choice_rows(method, picked, pairs)
    if args.early_exit:
        # The one-hop reranker, the chosen method and the pair choice's pick (the method adapt ships, last).
        bases = {n: method["candidates"][n]["efficientrag"] for n in (LABELER_RERANK, method["chosen"])}
        bases |= {n: row["efficientrag"] for n, row in rows.items()}
        exit_cfg = ExitChoiceConfig(enabled=True, thresholds=args.thresholds)
        exits, exit_dev_rows = choose_exits(exit_cfg, judge, models, root, bases)
        method = {**method, "early_exit": exits}
        rows |= exit_dev_rows
    on_dev = with_pair_budgets(with_dev_rows(method, rows), args.pair_budgets)
    method["preset"] = str(write_preset(args.retriever, shipped(method, on_dev), root / "retrieve.yaml"))
    evaluated = dev_pools(opts, work, train_on, eval_on)
    pseudo = None
    if args.target_pseudo:
        sets = target_pseudo_sets(evaluated, train_on, progress=not args.quiet)
        if not sets:
            parser.error("--target-pseudo: no left-out --eval-on set gave a pseudo-question")
        pjudge = Judge(sets, loop, root / "method_choice", progress=not args.quiet)
        pseudo = choose_method(pjudge, models, loop, choice)[1]
    sections = {}
    for name, pool in evaluated.items():
        out = root / "dev-containment" / _slug(name, pool)
        sections[name] = dev_section(on_dev, pool.retriever, pool.examples, out)
        if args.early_exit:
            sections[name] += ["", *exit_section(args, on_dev, method["early_exit"], pool, out)]
    text = report(
        args,
        train_on,
        (label, overrides),
        models,
        (method, pseudo),
        sections,
        (time.perf_counter() - t0) / 60,
        command_line(__file__, argv),
    )
    publish(text, args.out)
    return 0


if __name__ == "__main__":
    from efficientrag.eval.interrupts import main_reporting_interrupts

    sys.exit(main_reporting_interrupts(main))
