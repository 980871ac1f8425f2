"""Does the loop earn its hops? Retrieve-then-rerank beside EfficientRAG, at equal chunks.

A practitioner does not put Direct-R in front of an LLM: they retrieve wider (top 20-50) and rerank
with a cross-encoder, then keep the top few. This benchmark puts those rerankers beside the hop loop
under the honest protocol of ``benchmarks/retrieval_efficientrag.py``:

1. For each direction (training files -> dev sets), the Labeler and Filter trained on the training
   files' synthesized data and EfficientRAG's setting chosen on their validation questions (both
   cached in, and shared with, ``retrieval_efficientrag.py``'s work folder).
2. A MiniLM cross-encoder trained on the same training questions (``efficientrag train reranker``,
   ``configs/reranker/minilm-cpu.yaml``; gold chunks positive, hard negatives from the same search).
   With several ``--reranker-grid`` recipes, the one with the best validation score (mean over the
   training files of (recall + all-gold) / 2 of the top 20 reranked, K=6) is used.
3. On every dev question of each evaluated dataset, over its pooled dev corpus (and with
   ``--open-domain N`` on N 2Wiki open-domain train questions none was trained on, over their own
   5,813-document corpus): Direct-R, ``rerank``
   (the cross-encoder over the question's top N) and ``labeler_rerank`` (the Labeler's Continue
   probability over the same top N, one hop, no Filter) at N = 20 and 50, each at K = 2 to 10, and
   EfficientRAG with its chosen setting.
4. Reported: recall, all-gold and answer recall against K; each reranker read at EfficientRAG's own
   chunk count (interpolated); the same split by question type (HotpotQA bridge / comparison; 2Wiki
   compositional / comparison / inference / bridge_comparison; MuSiQue by hop count); seconds per
   question beside each (the loop's own stage timings; a reranker's search + scoring).
5. Each reranker row alone or fused with the search's order (reciprocal rank fusion), as a deployed
   reranker is tuned: the choice made on the training files' validation questions, the search's
   own order scored beside it; on each left-out set the row (or the search itself) chosen on the
   pseudo-validation questions mined from its corpus (``rerank_pseudo.py``) and checked on its
   validation questions (``rerank_fusion.py``). ``--validation-only`` stops there, before any dev question: the
   rerankers' table alone, without the loop's setting (about 45 minutes a direction on 2 cores).
6. ``--deployed-only``: on each dev set a committed report has, the one reranker validation would
   deploy there, fused as chosen, beside the search's own order and the report's loop row, read at
   the loop's chunk count (``rerank_deployed.py``; the loop is not run again).
7. With ``--adapt``, each left-out set again after ``efficientrag adapt`` on its corpus: the adapted
   loop (its setting chosen again, on adapt's scoring sets) and the adapted Labeler as a reranker,
   beside the same Direct-R and cross-encoder rows (``rerank_adapted.py``).

    python benchmarks/retrieval_rerank.py --retriever bm25 --train-on 2wikimultihopqa,musique
    python benchmarks/retrieval_rerank.py --retriever bm25 --train-on 2wikimultihopqa,musique \
        --eval-on hotpotqa --adapt
    python benchmarks/retrieval_rerank.py --retriever bm25 --leave-one-out
    python benchmarks/retrieval_rerank.py --retriever dense --leave-one-out
    python benchmarks/retrieval_rerank.py --retriever bm25 --leave-one-out --validation-only
    python benchmarks/retrieval_rerank.py --retriever bm25 --leave-one-out --deployed-only --open-domain 100

With ``--retriever dense`` the report has TreeHop's rows too (``rerank_treehop.py``: trained and
chosen as ``retrieval_treehop.py`` does, sharing its cache). No dev question chooses anything.
Everything is cached under ``--work-dir``: a rerun redoes only what is missing, and a run made
under other inputs (a retrained model, another setting) is redone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import rerank_deployed
import rerank_treehop
from report_output import command_line
from rerank_cross_encoder import RECIPES, train_cross_encoder
from rerank_fusion import deployed_rerankers, write_validation_report
from rerank_methods import KS, rerankers, time_side_by_side
from rerank_tables import known_types, plot_dataset, render
from retrieval_efficientrag import (
    DATASETS,
    DEV_FILES,
    OPEN_DOMAIN,
    TRAIN_FILES,
    Pool,
    ProtocolOptions,
    choose,
    dataset_names,
    load_rag,
    open_pool,
    parse_protocol_args,
    protocol_parser,
    quick_config,
    run_setting,
    train,
)

# The rank_weight values the fill-labeled-r<w> loop variants offer validation (a log-spaced grid).
RANK_WEIGHTS = ("0.02", "0.05", "0.1", "0.2")
# Changes to the loop meant to beat the rerankers, each tried on the validation questions
# on top of the protocol's chosen setting; the best protocol score (mean over the training files of
# (recall + all-gold) / 2, the chunk budget unchanged) is reported on dev beside the protocol's own.
LOOP_VARIANTS = {
    "first20": ["first_top_k=20"],
    "first30": ["first_top_k=30"],
    # A question whose loop keeps fewer chunks than the budget gets the rest from its own first-hop
    # hits (``fill_budget``): every question then costs the budget, as a reranker's top K does.
    "fill": ["fill_budget=true"],
    # The same budget filled from everything the Labeler judged, at any hop, most probable first
    # (``fill_from=labeled``): its own ranking of all it read, where ``fill`` takes the search's.
    "fill-labeled": ["fill_budget=true", "fill_from=labeled"],
    # ... with the search's own order added where the budget ranks chunks (``rank_weight``): a
    # chunk's score is its Continue probability + w / (1 + its best rank in any query's hits).
    **{
        f"fill-labeled-r{w}": ["fill_budget=true", "fill_from=labeled", f"rank_weight={w}"]
        for w in RANK_WEIGHTS
    },
    # The loop that contains its Labeler as a reranker: the first hop judges the question's top 20,
    # the budget holds the best-scored of every judged chunk (``budget_policy=rerank``, no floor), so
    # a later hop's chunk enters only by outscoring the lowest of the one-hop reranker's top K.
    "rerank20": [
        "first_top_k=20",
        "floor_k=0",
        "budget_policy=rerank",
        "fill_budget=false",
        "fill_from=first_hits",
    ],
    # Every hop as wide as a reranker's N: the Labeler judges the top 20 of each query and the budget
    # keeps its best (the probe of the adapted models; about 3-4 times the loop's cost).
    "top20": ["top_k=20"],
}
# The same, with the direction's cross-encoder reordering the question's wide first hop before the
# Labeler judges its best top_k (``first_hop_reranker``; the floor is then the reranker's top
# floor_k): retrieve-then-rerank as the loop's first hop, hops on from there.
RERANKED_VARIANTS = {
    "ce20": ["first_top_k=20"],
    "ce50": ["first_top_k=50"],
    "ce20-f5": ["first_top_k=20", "floor_k=5"],
    "ce20-fill": ["first_top_k=20", "fill_budget=true"],
}
OPEN_DOMAIN_NAME = "2wikimultihopqa open-domain"


def loop_candidates(
    setting: tuple[str, list[str]], loop_variants: list[str], reranked_variants: list[str], reranker: Path
) -> dict[str, list[str]]:
    """The protocol's setting and each named variant on top of it (a variant's keys replace the
    setting's), by label."""
    label, overrides = setting
    candidates = {label: overrides}
    variants = {n: LOOP_VARIANTS[n] for n in loop_variants}
    variants |= {n: [*RERANKED_VARIANTS[n], f"first_hop_reranker={reranker}"] for n in reranked_variants}
    for name, changes in variants.items():
        keys = {v.split("=")[0] for v in changes}
        candidates[f"{label}+{name}"] = [o for o in overrides if o.split("=")[0] not in keys] + changes
    return candidates


def choose_loop(
    args: argparse.Namespace,
    models: Path,
    pools: dict[str, Pool],
    setting: tuple[str, list[str]],
    reranker: Path,
) -> tuple[tuple[str, list[str]], dict[str, float]]:
    """The protocol's setting or one of ``LOOP_VARIANTS`` / ``RERANKED_VARIANTS`` (with ``reranker``)
    on top of it: the best validation score."""
    from retrieval_efficientrag import validation_examples

    candidates = loop_candidates(setting, args.loop_variants, args.reranked_variants, reranker)
    scores = {}
    for cand, ov in candidates.items():
        per_file = []
        for name, pool in pools.items():
            cfg = quick_config(models, name, ProtocolOptions.from_args(args))
            val = validation_examples(pool, cfg)
            res = run_setting(pool, load_rag(pool, models), val, cand, ov, models / "validation" / name, cfg)
            per_file.append((res["retrieval"]["all"]["recall"] + res["retrieval"]["all"]["all_gold"]) / 2)
        scores[cand] = sum(per_file) / len(per_file)
    best = max(candidates, key=lambda c: scores[c])
    return (best, candidates[best]), scores


def evaluate_dev(
    args: argparse.Namespace,
    pool: Pool,
    dataset: str,
    models: Path,
    reranker: Path,
    loops: dict[str, tuple[str, list[str]]],
    out: Path,
    reuse: dict[str, Any] | None = None,
    treehop: rerank_treehop.TreeHopRows | None = None,
    fusion: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Every method on the pool's questions (of ``dataset``), each run cached in its own folder under
    ``out``. ``loops``: the EfficientRAG settings reported, by row name (``"EfficientRAG"``: the one
    chosen); ``reuse``: rows already evaluated on the same questions (another call's results), kept
    as they are instead of being run again; ``treehop``: TreeHop's rows too (dense search);
    ``fusion``: each reranker row's fusion with the search's order (``rerank_fusion.choose_fusion``).

    Returns:
        Per method: its summary and its per-question records.
    """
    from efficientrag.baselines.direct_r import DirectRetrieval
    from efficientrag.eval.job_runs import evaluate_ranked_run

    examples, progress, reuse = pool.examples, not args.quiet, reuse or {}
    runs = {}
    if "Direct-R" not in reuse:
        search_order = DirectRetrieval.ranking(pool.retriever, KS)
        direct = evaluate_ranked_run(search_order, examples, out / "direct_r_k", ks=KS, progress=progress)
        runs["Direct-R"] = (dict(direct), out / "direct_r_k")
    cfg = quick_config(out, dataset, ProtocolOptions.from_args(args))
    for name, (lab, ov) in loops.items():
        # Each setting its own models and prediction cache: a run served from another's cache would
        # time the cache, not the loop.
        rag = load_rag(pool, models)
        runs[name] = (dict(run_setting(pool, rag, examples, lab, ov, out, cfg)), out / lab)
    if treehop is not None:
        runs |= rerank_treehop.evaluate(treehop, pool, examples, out)
    for name, (method, folder) in rerankers(pool, models, reranker, fusion or {}).items():
        if name in reuse:
            continue
        run_dir = out / folder
        runs[name] = (
            dict(evaluate_ranked_run(method, examples, run_dir, ks=KS, progress=progress)),
            run_dir,
        )
    types = known_types(args.shared_data, dataset)
    results = dict(reuse) | {
        name: {"summary": summary, "records": _records(run_dir, types)}
        for name, (summary, run_dir) in runs.items()
    }
    if args.time_sample:
        sample = examples[: args.time_sample]
        timed = time_side_by_side(
            pool, models, reranker, loops, sample, skip=set(reuse), treehop=treehop, fusion=fusion or {}
        )
        for name, seconds in timed.items():
            results[name]["timed_s"] = seconds
    return results


def _records(run_dir: Path, types: dict[str, str]) -> list[dict[str, Any]]:
    """The per-question records a run wrote (type, scores at each K, counters); a record without a
    type takes it from ``types`` where known."""
    from efficientrag.jsonl import read_jsonl

    keep = ("id", "type", "retrieval", "counters")
    rows = [{k: r.get(k) for k in keep} for r in read_jsonl(run_dir / "predictions.jsonl")]
    for r in rows:
        r["type"] = r["type"] or types.get(str(r["id"]), "")
    return rows


def open_domain_pool(opts: ProtocolOptions, work: Path, train_on: list[str]) -> Pool:
    """The first ``--open-domain`` 2Wiki open-domain train questions that no step trained on, over
    their own 5,813-document corpus (``retrieval_efficientrag.py``'s open-domain set)."""
    questions, corpus = OPEN_DOMAIN
    pool = open_pool("opendomain-2wiki", [("2wikimultihopqa", questions)], work / "pools", opts, corpus)
    trained: set[str] = set()
    if "2wikimultihopqa" in train_on:
        with (Path(opts.shared_data) / TRAIN_FILES["2wikimultihopqa"]).open(encoding="utf-8") as fh:
            trained = {str(rec.get("_id") or rec.get("id")) for rec in json.load(fh)}
    examples = [ex for ex in pool.examples if ex.id not in trained][: opts.open_domain]
    return Pool(pool.name, pool.corpus, examples, pool.retriever)


def dev_sets(
    opts: ProtocolOptions, work: Path, train_on: list[str], eval_on: list[str], models: Path
) -> dict[str, tuple[str, Pool, Path]]:
    """Set name -> its dataset, pool and run folder: each evaluated dev set, and the open-domain set
    with ``--open-domain``."""
    sets = {
        name: (
            name,
            open_pool(f"dev-{name}", [(name, DEV_FILES[name])], work / "pools", opts),
            models / "dev" / name,
        )
        for name in eval_on
    }
    if opts.open_domain:
        pool = open_domain_pool(opts, work, train_on)
        sets[OPEN_DOMAIN_NAME] = (
            "2wikimultihopqa",
            pool,
            models / "dev" / f"opendomain-2wiki-{len(pool.examples)}",
        )
    return sets


def shared_rows(runs: dict[str, Any]) -> dict[str, Any]:
    """The rows that do not depend on the Labeler and Filter: Direct-R and the cross-encoder's."""
    return {n: r for n, r in runs.items() if n == "Direct-R" or n.startswith("rerank ")}


def after_adaptation(
    args: argparse.Namespace,
    work: Path,
    models: Path,
    pools: dict[str, Pool],
    dev: Pool,
    setting: tuple[str, list[str]],
    reranker: Path,
    before: dict[str, Any],
    fusion: dict[str, str],
) -> tuple[str, dict[str, Any], str]:
    """``--adapt``: the direction's models adapted to the left-out ``dev`` pool's corpus, the loop's
    setting chosen again for them, and every row that changes (the loops, the Labeler reranks)
    evaluated beside the un-adapted run's Direct-R and cross-encoder rows (``before``); each
    reranker fused as the training files' validation chose (``fusion``).

    Returns:
        The report's name for the set, its rows and the paragraph saying what was chosen.
    """
    from rerank_adapted import adapt_models, adaptation_note, adapted_root, choose_adapted_loop

    target = dev.name.removeprefix("dev-")
    opts = ProtocolOptions.from_args(args)
    adapted, summary, sets = adapt_models(opts, work, models, pools, target, setting[1])
    candidates = loop_candidates(setting, args.loop_variants, [], reranker)
    root = adapted_root(models, target)
    chosen, scores = choose_adapted_loop(opts, adapted, candidates, sets, root / "loop-choice")
    loops = {"EfficientRAG": chosen}
    if chosen[0] != setting[0]:
        loops["EfficientRAG, protocol setting (not chosen)"] = setting
    runs = evaluate_dev(
        args, dev, target, adapted, reranker, loops, root / "dev", reuse=shared_rows(before), fusion=fusion
    )
    return f"{target} after adaptation", runs, adaptation_note(target, summary, chosen, scores)


def left_out_sets(args: argparse.Namespace, train_on: list[str], eval_on: list[str]) -> list[str]:
    """The datasets a direction reports without training on them: each needs its own left-out
    choice (the open-domain set is a 2Wiki set, so 2Wiki counts when it is asked for)."""
    wanted = [*eval_on, *(["2wikimultihopqa"] if args.open_domain else [])]
    return [d for d in dict.fromkeys(wanted) if d not in train_on]


def run_direction(args: argparse.Namespace, work: Path, train_on: list[str], eval_on: list[str]) -> str:
    t0 = time.perf_counter()
    opts = ProtocolOptions.from_args(args)
    models, counts, pools = train(opts, work, train_on)
    left_out = left_out_sets(args, train_on, eval_on)
    if args.validation_only or args.deployed_only:
        reranker, reranker_info = train_cross_encoder(args, work, train_on, pools)
        _, deployed = deployed_rerankers(opts, work, models, pools, reranker, left_out)
        if args.validation_only:
            info = reranker_info | deployed
            return write_validation_report(args, work, train_on, eval_on, info, command_line(__file__), t0)
        sets = dev_sets(opts, work, train_on, eval_on, models)
        return rerank_deployed.write_report(
            args, work, train_on, sets, models, reranker, deployed, command_line(__file__), t0
        )
    label, overrides, validation = choose(opts, work, models, pools)
    reranker, reranker_info = train_cross_encoder(args, work, train_on, pools)
    chosen, loop_scores = choose_loop(args, models, pools, (label, overrides), reranker)
    fusion, deployed = deployed_rerankers(opts, work, models, pools, reranker, left_out)
    reranker_info |= deployed
    loops = {"EfficientRAG": chosen}
    if chosen[0] != label:
        loops["EfficientRAG, protocol setting (not chosen)"] = (label, overrides)
    results, notes = {}, []
    treehop = None
    if args.retriever == "dense" and not args.no_treehop:
        treehop = rerank_treehop.prepare(args, work, train_on)
        notes.append(rerank_treehop.note(treehop))
    for name in eval_on:
        pool = open_pool(f"dev-{name}", [(name, DEV_FILES[name])], work / "pools", opts)
        results[name] = evaluate_dev(
            args, pool, name, models, reranker, loops, models / "dev" / name, treehop=treehop, fusion=fusion
        )
        if args.adapt and name not in train_on:
            key, runs, note = after_adaptation(
                args, work, models, pools, pool, (label, overrides), reranker, results[name], fusion
            )
            results[key] = runs
            notes.append(note)
    if args.open_domain:
        pool = open_domain_pool(opts, work, train_on)
        out = models / "dev" / f"opendomain-2wiki-{len(pool.examples)}"
        results[OPEN_DOMAIN_NAME] = evaluate_dev(
            args, pool, "2wikimultihopqa", models, reranker, loops, out, treehop=treehop, fusion=fusion
        )
    report = render(
        command=command_line(__file__),
        retriever=args.retriever,
        train_on=train_on,
        setting=chosen,
        loop_scores=loop_scores,
        validation_n=validation["n"],
        reranker=reranker_info,
        results=results,
        minutes=(time.perf_counter() - t0) / 60,
        timed_on=args.time_sample,
        notes=notes,
    )
    tag = "+".join(train_on) + "_to_" + "+".join(eval_on)
    plots = []
    for dataset, runs in results.items():
        where = "in domain" if dataset.split()[0] in train_on else "left out"
        plots.append(plot_dataset(dataset, where, runs, work / f"rerank-{tag}-{dataset}.png"))
    report += "\n" + "\n".join(f"![{p.stem}]({p.name})" for p in plots) + "\n"
    (work / f"rerank-{tag}.md").write_text(report, encoding="utf-8")
    summaries = {d: {m: r["summary"] for m, r in per.items()} for d, per in results.items()}
    (work / f"rerank-{tag}.json").write_text(
        json.dumps(
            {
                "setting": list(chosen),
                "loop_scores": loop_scores,
                "reranker": reranker_info,
                "results": summaries,
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    return report


def direction_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of a script that trains or reuses a protocol direction's models and reports its
    dev sets: the search, the Labeler's epochs, both models' overrides, the open-domain set."""
    parser.add_argument("--retriever", choices=("dense", "bm25", "hybrid"), default="bm25")
    parser.add_argument("--epochs", type=int, default=3, help="Labeler epochs (retrieval_efficientrag.py's)")
    parser.add_argument("--labeler-overrides", nargs="*", default=[])
    parser.add_argument("--filter-overrides", nargs="*", default=[])
    parser.add_argument(
        "--open-domain",
        type=int,
        default=0,
        metavar="N",
        help="also report N 2Wiki open-domain train questions (none trained on) over their own corpus",
    )


def main(argv: list[str] | None = None) -> int:
    parser = protocol_parser(__doc__, "for each dataset: train on the others, report on all three")
    direction_arguments(parser)
    # neg4-ep4 alone by default: on 2 shared CPU cores one recipe takes ~75 minutes (the epoch is
    # still chosen on validation); name both on a bigger machine.
    parser.add_argument("--reranker-grid", nargs="+", default=["neg4-ep4"], choices=list(RECIPES))
    parser.add_argument("--reranker-overrides", nargs="*", default=[], metavar="key=value")
    parser.add_argument(
        "--loop-variants", nargs="*", default=list(LOOP_VARIANTS), choices=list(LOOP_VARIANTS)
    )
    parser.add_argument(
        "--reranked-variants", nargs="*", default=list(RERANKED_VARIANTS), choices=list(RERANKED_VARIANTS)
    )
    parser.add_argument(
        "--time-sample",
        type=int,
        default=50,
        metavar="N",
        help="time every method on the first N questions of each set, side by side in this process "
        "(0: report each run's own stage timings)",
    )
    parser.add_argument(
        "--adapt",
        action="store_true",
        help="also report each left-out set after `efficientrag adapt` on its corpus (rerank_adapted.py)",
    )
    parser.add_argument(
        "--validation-only",
        action="store_true",
        help="train the Labeler and the cross-encoder, choose each reranker's fusion on validation, "
        "check it on each left-out set's validation questions, and stop before any dev question",
    )
    parser.add_argument(
        "--deployed-only",
        action="store_true",
        help="on each dev set the committed reports have, the reranker validation would deploy there "
        "(fused as chosen) beside the search's order, read at the loop's chunk count from those "
        "reports (rerank_deployed.py); the loop is not run",
    )
    parser.add_argument(
        "--loop-reports",
        default=str(rerank_deployed.REPORTS),
        metavar="DIR",
        help="with --deployed-only: the committed dev reports, as <DIR>/<search>/<train>_to_<sets>.md",
    )
    no_treehop = "with --retriever dense: leave TreeHop's rows out (rerank_treehop.py)"
    parser.add_argument("--no-treehop", action="store_true", help=no_treehop)
    args = parse_protocol_args(parser, argv)
    work = Path(args.work_dir) / args.retriever
    directions = (
        [([d for d in DATASETS if d != held], list(DATASETS)) for held in DATASETS]
        if args.leave_one_out
        else [(dataset_names(parser, args.train_on), dataset_names(parser, args.eval_on))]
    )
    reports = []
    for train_on, eval_on in directions:
        reports.append(run_direction(args, work, train_on, eval_on))
        print(reports[-1], flush=True)
    return 0


if __name__ == "__main__":
    from efficientrag.eval.interrupts import main_reporting_interrupts

    sys.exit(main_reporting_interrupts(main))
