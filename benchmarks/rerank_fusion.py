"""Rerankers as they are deployed: each alone or fused with the search's order, chosen on validation.

A practitioner tunes a reranker before deploying it, and a common tuning is to fuse its order with
the search's own (reciprocal rank fusion), so that it seldom falls below the search it reorders
(fusion guarantees nothing: the table shows where it does).
``retrieval_rerank.py`` offers each of its reranker rows both ways and keeps the one the training
files' validation questions score higher. This module scores them (with the search's own order on
the same questions beside them), makes the choice, checks the chosen rows on a left-out set's
validation questions (the held-back part of its train file, which no step of the direction trained
or chose on) and renders the table the report shows.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rerank_methods import FUSIONS, fused_folder, rerankers
from retrieval_efficientrag import TRAIN_FILES, Pool, open_pool, quick_config

# Where a reranker's fusion is chosen: K = 6, as the cross-encoder's recipe is.
FUSION_K = 6
# The search's own order, as a row of the validation scores.
SEARCH_ROW = "the search's own order"

# training file -> row name -> fusion -> (recall + all-gold) / 2 at FUSION_K
Scores = dict[str, dict[str, dict[str, float]]]


def validation_scores(
    args: argparse.Namespace, models: Path, pools: Mapping[str, Pool], reranker: Path
) -> Scores:
    """Every reranker row alone and fused, and the search's own order (``SEARCH_ROW``, under the
    fusion ``"none"``), on each pool's validation questions: the mean of recall and all-gold at
    ``FUSION_K``, in %. Each run is cached under ``models/validation/<pool>``.

    Args:
        args: The benchmark's arguments (``--quiet`` and what ``quick_config`` reads).
        models: The direction's models folder (the Labeler under ``labeler/best``).
        pools: Dataset name -> its train-file pool; its validation questions are scored.
        reranker: The cross-encoder's folder.
    """
    from retrieval_efficientrag import validation_examples

    from efficientrag.baselines.direct_r import DirectRetrieval
    from efficientrag.eval.job_runs import evaluate_ranked_run

    def score(method: Any, val: list, out: Path) -> float:
        at_k = evaluate_ranked_run(method, val, out, ks=[FUSION_K], progress=not args.quiet)["retrieval"]
        return (at_k[str(FUSION_K)]["recall"] + at_k[str(FUSION_K)]["all_gold"]) / 2

    by_file: Scores = {}
    for name, pool in pools.items():
        val = validation_examples(pool, quick_config(models, name, args))
        root = models / "validation" / name
        search = DirectRetrieval.ranking(pool.retriever, [FUSION_K])
        by_file[name] = {SEARCH_ROW: {"none": score(search, val, root / f"direct_r_k{FUSION_K}")}}
        # Each row's model loaded once per pool; the fusion is a setting of the loaded method.
        for row, (method, folder) in rerankers(pool, models, reranker).items():
            for fusion in FUSIONS:
                method.cfg = replace(method.cfg, fusion=fusion)
                by_file[name].setdefault(row, {})[fusion] = score(
                    method, val, root / fused_folder(folder, fusion)
                )
    return by_file


def choose_fusion(by_file: Scores) -> dict[str, str]:
    """Row name -> its fusion: the higher mean over the files of ``by_file``; a tie keeps the
    reranker alone."""
    rows = [row for row in next(iter(by_file.values())) if row != SEARCH_ROW]
    mean = {
        row: {f: sum(v[row][f] for v in by_file.values()) / len(by_file) for f in FUSIONS} for row in rows
    }
    return {row: max(FUSIONS, key=lambda f, s=s: (s[f], -FUSIONS.index(f))) for row, s in mean.items()}


def deployed_rerankers(
    args: argparse.Namespace,
    work: Path,
    models: Path,
    pools: Mapping[str, Pool],
    reranker: Path,
    left_out: list[str],
) -> tuple[dict[str, str], dict[str, Any]]:
    """Each reranker row's fusion, chosen on the training files' validation questions, and the
    scores behind it, with the same rows on each ``left_out`` set's validation questions beside them.

    Returns:
        Row name -> its fusion, and what the report shows (``fusion``, ``fusion_validation``,
        ``fusion_left_out``).
    """
    by_file = validation_scores(args, models, pools, reranker)
    chosen = choose_fusion(by_file)
    held = {
        name: open_pool(f"train-{name}", [(name, TRAIN_FILES[name])], work / "pools", args)
        for name in left_out
    }
    info = {"fusion": chosen, "fusion_validation": by_file}
    if held:
        info["fusion_left_out"] = validation_scores(args, models, held, reranker)
    return chosen, info


def fusion_table(chosen: Mapping[str, str], by_file: Scores, left_out: Scores | None = None) -> list[str]:
    """The report's lines: each reranker alone and fused on the training files' validation questions
    (and, checked but not chosen on, each left-out set's), the search's own order beside them, the
    chosen fusion in bold; then per file the best chosen reranker against the search's order (a
    deployed reranker is expected not to fall below its search)."""
    every = {**by_file, **(left_out or {})}
    files = list(every)
    heads = [f if f in by_file else f"{f} (left out)" for f in files]
    lines = [
        "Each reranker alone or fused with the search's order by reciprocal rank fusion, the higher mean "
        "over the training files chosen (a tie keeps it alone); validation questions, mean of recall and "
        f"all-gold@{FUSION_K}, alone / fused"
        + (
            " (a left-out set's: the held-back part of its train file, checked, not chosen on)"
            if left_out
            else ""
        )
        + ":",
        "",
        f"| reranker | chosen | {' | '.join(heads)} | mean of the training files |",
        "|---|---|" + "---|" * (len(files) + 1),
    ]
    search_mean = sum(by_file[f][SEARCH_ROW]["none"] for f in by_file) / len(by_file)
    cells = [f"{every[f][SEARCH_ROW]['none']:.2f}" for f in files]
    lines.append(f"| {SEARCH_ROW} | | {' | '.join(cells)} | {search_mean:.2f} |")
    for row, fusion in chosen.items():
        cells = []
        for f in [*files, None]:
            pair = {
                x: every[f][row][x] if f else sum(by_file[g][row][x] for g in by_file) / len(by_file)
                for x in FUSIONS
            }
            cells.append(" / ".join(f"**{v:.2f}**" if x == fusion else f"{v:.2f}" for x, v in pair.items()))
        lines.append(f"| {row} | {fusion} | {' | '.join(cells)} |")
    verdicts = []
    for f, head in zip(files, heads, strict=True):
        best_row = max(chosen, key=lambda r: every[f][r][chosen[r]])
        best, floor = every[f][best_row][chosen[best_row]], every[f][SEARCH_ROW]["none"]
        verdict = "at or above" if best >= floor else "below"
        verdicts.append(
            f"{head}: {best_row} ({chosen[best_row]}) {best:.2f}, {verdict} the search's {floor:.2f}"
        )
    lines += ["", f"Best chosen reranker on each set's validation questions: {'; '.join(verdicts)}."]
    return lines


def write_validation_report(
    args: argparse.Namespace,
    work: Path,
    train_on: list[str],
    eval_on: list[str],
    reranker: Mapping[str, Any],
    command: str,
    t0: float,
) -> str:
    """``--validation-only``: the rerankers' fusion table, without the loop's setting or any dev
    question, written to ``rerank-validation-<direction>.md`` (and ``.json``) in the work folder.

    Args:
        args: The benchmark's arguments (``--retriever``).
        work: The search's work folder.
        train_on: The direction's training files.
        eval_on: Every set of the direction (its name in the file's).
        reranker: The cross-encoder's recipe and :func:`deployed_rerankers`' scores.
        command: The command line, for the report.
        t0: ``time.perf_counter()`` at the start, for the report's minutes.
    """
    minutes = (time.perf_counter() - t0) / 60
    lines = [
        f"## Rerankers as deployed, on validation questions (search: {args.retriever})",
        "",
        f"Command: `{command}` ({minutes:.0f} min)",
        "",
        f"Trained on the train files of {', '.join(train_on)}: the Labeler (its Continue probability as "
        f"a reranker) and the cross-encoder (recipe {reranker['recipe']}, chosen on the same validation "
        "questions). No dev question is read.",
        "",
        *fusion_table(reranker["fusion"], reranker["fusion_validation"], reranker.get("fusion_left_out")),
    ]
    report = "\n".join(lines) + "\n"
    tag = "+".join(train_on) + "_to_" + "+".join(eval_on)
    (work / f"rerank-validation-{tag}.md").write_text(report, encoding="utf-8")
    (work / f"rerank-validation-{tag}.json").write_text(json.dumps(reranker, indent=1), encoding="utf-8")
    return report
