"""Rerankers as they are deployed: each alone or fused with the search's order, chosen on validation.

A practitioner tunes a reranker before deploying it, and a common tuning is to fuse its order with
the search's own (reciprocal rank fusion), so that it seldom falls below the search it reorders
(fusion guarantees nothing: the table shows where it does).
``retrieval_rerank.py`` offers each of its reranker rows both ways and keeps the one the training
files' validation questions score higher. This module scores them (with the search's own order on
the same questions beside them), makes the choice, and says what is deployed on each set: in
domain the best of the rows and the search on the set's own validation questions; on a left-out
set the choice made on its corpus's pseudo-validation questions (``rerank_pseudo.py``), checked on
its validation questions (the held-back part of its train file, which no step of the direction
trained or chose on). It renders the table the report shows.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from report_output import heading
from rerank_methods import FUSION_K, FUSIONS, SEARCH_ROW, Scores, fused_folder, rerankers
from rerank_pseudo import choose_on_pseudo, pseudo_mean, pseudo_scores
from retrieval_efficientrag import TRAIN_FILES, Pool, ProtocolOptions, open_pool, quick_config


def validation_scores(
    opts: ProtocolOptions, models: Path, pools: Mapping[str, Pool], reranker: Path
) -> Scores:
    """Every reranker row alone and fused, and the search's own order (``SEARCH_ROW``, under the
    fusion ``"none"``), on each pool's validation questions: the mean of recall and all-gold at
    ``FUSION_K``, in %. Each run is cached under ``models/validation/<pool>``.

    Args:
        opts: The protocol's options (``quiet`` and what ``quick_config`` reads).
        models: The direction's models folder (the Labeler under ``labeler/best``).
        pools: Dataset name -> its train-file pool; its validation questions are scored.
        reranker: The cross-encoder's folder.
    """
    from retrieval_efficientrag import validation_examples

    from efficientrag.baselines.direct_r import DirectRetrieval
    from efficientrag.eval.job_runs import evaluate_ranked_run

    def score(method: Any, val: list, out: Path) -> float:
        at_k = evaluate_ranked_run(method, val, out, ks=[FUSION_K], progress=not opts.quiet)["retrieval"]
        return (at_k[str(FUSION_K)]["recall"] + at_k[str(FUSION_K)]["all_gold"]) / 2

    by_file: Scores = {}
    for name, pool in pools.items():
        val = validation_examples(pool, quick_config(models, name, opts))
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
    opts: ProtocolOptions,
    work: Path,
    models: Path,
    pools: Mapping[str, Pool],
    reranker: Path,
    left_out: list[str],
) -> tuple[dict[str, str], dict[str, Any]]:
    """Each reranker row's fusion, chosen on the training files' validation questions, and the
    scores behind it, with the same rows on each ``left_out`` set's validation questions beside them
    and the choice made on its corpus's pseudo-validation questions.

    Returns:
        Row name -> its fusion, and what the report shows (``fusion``, ``fusion_validation``,
        ``fusion_left_out``, ``pseudo``: left-out set -> ``rerank_pseudo.pseudo_scores``' result and
        its ``chosen`` [row, fusion]).
    """
    by_file = validation_scores(opts, models, pools, reranker)
    chosen = choose_fusion(by_file)
    held = {
        name: open_pool(f"train-{name}", [(name, TRAIN_FILES[name])], work / "pools", opts)
        for name in left_out
    }
    info: dict[str, Any] = {"fusion": chosen, "fusion_validation": by_file}
    if held:
        info["fusion_left_out"] = validation_scores(opts, models, held, reranker)
        info["pseudo"] = {}
        for name, pool in held.items():
            found = pseudo_scores(
                pool, models, reranker, models / "validation" / f"pseudo-{name}", not opts.quiet
            )
            info["pseudo"][name] = found | {"chosen": list(choose_on_pseudo(pseudo_mean(found)))}
    return chosen, info


def deployed_row(
    dataset: str, train_on: list[str], fusion: Mapping[str, str], by_file: Scores, pseudo: Mapping[str, Any]
) -> tuple[str, str]:
    """(row, fusion) a user would deploy on ``dataset``: in domain the best on the set's own
    validation questions of the reranker rows (fused as ``fusion`` says) and the search's own order
    (last; a tie keeps a reranker); on a left-out dataset the choice made on its corpus's
    pseudo-validation questions (``rerank_pseudo.choose_on_pseudo``).

    Args:
        dataset: The set's dataset (``2wikimultihopqa`` for the open-domain set).
        train_on: The direction's training files.
        fusion: Row name -> its chosen fusion (:func:`choose_fusion`).
        by_file: The training files' validation scores (:func:`validation_scores`).
        pseudo: Left-out dataset -> its pseudo choice (``deployed_rerankers``' ``pseudo``).
    """
    if dataset not in train_on:
        row, fused = pseudo[dataset]["chosen"]
        return row, fused
    candidates = [(r, fusion[r]) for r in fusion] + [(SEARCH_ROW, "none")]
    own = by_file[dataset]
    return max(candidates, key=lambda c: (own[c[0]][c[1]], -candidates.index(c)))


def fusion_table(
    chosen: Mapping[str, str],
    by_file: Scores,
    left_out: Scores | None = None,
    pseudo: Mapping[str, Any] | None = None,
) -> list[str]:
    """The report's lines: each reranker alone and fused on the training files' validation questions
    (and, checked but not chosen on, each left-out set's), the search's own order beside them, the
    chosen fusion in bold; each left-out corpus's pseudo-validation choice; then per file what
    :func:`deployed_row` deploys against the search's order (a deployed reranker is expected not to
    fall below its search)."""
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
    pseudo = pseudo or {}
    for name, found in pseudo.items():
        lines += ["", *pseudo_table(name, found)]
    verdicts = []
    for f, head in zip(files, heads, strict=True):
        row, fusion = deployed_row(f, list(by_file), chosen, by_file, pseudo)
        best, floor = every[f][row][fusion], every[f][SEARCH_ROW]["none"]
        if row == SEARCH_ROW:
            verdicts.append(f"{head}: no reranker, the search's own order {floor:.2f}")
            continue
        verdict = "at or above" if best >= floor else "below"
        verdicts.append(f"{head}: {row} ({fusion}) {best:.2f}, {verdict} the search's {floor:.2f}")
    rule = "the best of the rows and the search on the set's own validation questions"
    if pseudo:
        rule = f"in domain {rule}; left out the pseudo-validation choice"
    lines += ["", f"Deployed on each set ({rule}), on its validation questions: {'; '.join(verdicts)}."]
    return lines


def pseudo_table(name: str, found: Mapping[str, Any]) -> list[str]:
    """One left-out corpus's pseudo-validation scores: each row alone / fused and the search's own
    order, per question kind and their mean, the chosen one in bold."""
    mean = pseudo_mean(found)
    kinds = list(found["scores"])
    row, fusion = found["chosen"]
    counts = " and ".join(f"{found['n'][k]} {k}" for k in kinds)
    lines = [
        f"{name} (left out): chosen on {counts} questions mined "
        "from its corpus (`efficientrag adapt`'s pseudo-validation, no question of the set read); mean of "
        f"recall and all-gold@{FUSION_K}, alone / fused:",
        "",
        f"| row | {' | '.join(kinds)} | mean |",
        "|---|" + "---|" * (len(kinds) + 1),
    ]
    for r, by_fusion in mean.items():
        cells = []
        for where in [*(found["scores"][k][r] for k in kinds), by_fusion]:
            shown = [f"**{v:.2f}**" if (r, x) == (row, fusion) else f"{v:.2f}" for x, v in where.items()]
            cells.append(" / ".join(shown))
        lines.append(f"| {r} | {' | '.join(cells)} |")
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
        *heading(
            f"## Rerankers as deployed, on validation questions (search: {args.retriever})",
            command,
            minutes,
        ),
        f"Trained on the train files of {', '.join(train_on)}: the Labeler (its Continue probability as "
        f"a reranker) and the cross-encoder (recipe {reranker['recipe']}, chosen on the same validation "
        "questions). No dev question is read.",
        "",
        *fusion_table(
            reranker["fusion"],
            reranker["fusion_validation"],
            reranker.get("fusion_left_out"),
            reranker.get("pseudo"),
        ),
    ]
    report = "\n".join(lines) + "\n"
    tag = "+".join(train_on) + "_to_" + "+".join(eval_on)
    (work / f"rerank-validation-{tag}.md").write_text(report, encoding="utf-8")
    (work / f"rerank-validation-{tag}.json").write_text(json.dumps(reranker, indent=1), encoding="utf-8")
    return report
