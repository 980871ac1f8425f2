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
from pathlib import Path
from typing import Any

from adaptation_methods import choice_lines, dev_section
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
from efficientrag.adapt.method_choice import MethodChoiceConfig, choose_method
from efficientrag.adapt.pair_choice import AS_CHOSEN, PairChoiceConfig, choose_pairs
from efficientrag.adapt.pseudo_rows import PseudoRowsConfig, build_pseudo_sets, pseudo_scoring_sets
from efficientrag.config import load_config
from efficientrag.config_values import to_dict
from efficientrag.fingerprint import folder_digest
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


def with_pair_choice(
    method: dict[str, Any], picked: EfficientRAGConfig, record: dict[str, Any]
) -> dict[str, Any]:
    """``method`` with its Labeler pairs chosen on the same validation questions
    (``adapt.pair_choice``): the record under ``pairs`` and, when a cheaper variant was picked, that
    variant as one more dev row beside the chosen method's own."""
    out = {**method, "pairs": record}
    if record["chosen"] != AS_CHOSEN:
        row = f"{method['chosen']}, {record['chosen']} (pairs chosen on validation)"
        out["candidates"] = {**method["candidates"], row: {"efficientrag": to_dict(picked)}}
    return out


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
        "--target-pseudo",
        action="store_true",
        help="also report the choice adapt's pseudo-questions over the left-out dev corpora would make",
    )
    parser.add_argument("--out", type=Path, help="also write the report here (Markdown)")
    args = parse_protocol_args(parser, argv)
    if args.rerank_top_k < 1 or args.open_domain < 0:
        parser.error("--rerank-top-k must be >= 1 and --open-domain >= 0")
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
    if args.choose_pairs:
        picked, pairs = choose_pairs(judge, models, chosen, PairChoiceConfig(enabled=True))
        method = with_pair_choice(method, picked, pairs)
    on_dev = with_pair_budgets(method, args.pair_budgets)
    evaluated = dev_pools(opts, work, train_on, eval_on)
    pseudo = None
    if args.target_pseudo:
        sets = target_pseudo_sets(evaluated, train_on, progress=not args.quiet)
        if not sets:
            parser.error("--target-pseudo: no left-out --eval-on set gave a pseudo-question")
        pjudge = Judge(sets, loop, root / "method_choice", progress=not args.quiet)
        pseudo = choose_method(pjudge, models, loop, choice)[1]
    sections = {
        name: dev_section(on_dev, pool.retriever, pool.examples, root / "dev-containment" / _slug(name, pool))
        for name, pool in evaluated.items()
    }
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
