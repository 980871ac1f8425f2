"""The retrieval method ``adapt`` chose for a left-out dataset, and how it fares on its dev questions.

``efficientrag adapt`` scores the loop, the Labeler as a one-hop reranker and the loop containing it
on its scoring sets (``efficientrag.adapt.method_choice``); ``adapt.json`` keeps every candidate's
numbers, settings, and what each group of sets alone would have chosen. The adaptation benchmark
renders that choice: the target's pseudo-questions against the source datasets' validation questions
(which of them would have chosen what), then every candidate on the target's dev questions at the
same chunk budget, with paired intervals against the one-hop reranker and against the search's own
top 10, on every dev question and on the part held back from design. The dev questions choose
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from efficientrag.adapt.method_choice import LABELER_RERANK, summarize
from efficientrag.config import load_config
from efficientrag.data.split import held_back
from efficientrag.eval.paired_bootstrap import paired_bootstrap
from efficientrag.eval.record_scores import mean, question_scores
from efficientrag.jsonl import read_jsonl
from efficientrag.pipeline.config import EfficientRAGConfig

Record = dict[str, Any]
GROUP_NAMES = {"pseudo": "the target's pseudo-questions", "validation": "the source datasets' validation"}


def choice_lines(method: Mapping[str, Any], chooser: str = "`adapt`") -> list[str]:
    """The candidates' numbers on every scoring set, and what each group alone would have chosen
    (``chooser``: who made the choice, for the heading)."""
    cands = method["candidates"]
    sets = list(next(iter(cands.values()))["sets"])
    groups = method["groups"]
    lines = [
        f"### The retrieval method (chosen by {chooser} at {method['chunk_budget']} chunks, the reranker's "
        f"N = {method['rerank_top_k']})",
        "",
        "| candidate | "
        + " | ".join(f"{s} ({groups[s]}): recall / all-gold / K / pairs" for s in sets)
        + " | score |",
        "|---|" + "---|" * len(sets) + "---:|",
    ]
    for name, c in cands.items():
        cells = [
            f"{r['recall']:.1f} / {r['all_gold']:.1f} / {r['num_chunks']:.2f} / {r['labeler_pairs']:.1f}"
            for r in (c["sets"][s] for s in sets)
        ]
        mark = "**" if name == method["chosen"] else ""
        lines.append(f"| {mark}{name}{mark} | " + " | ".join(cells) + f" | {c['score']:.2f} |")
    alone = "; ".join(f"on {GROUP_NAMES.get(g, g)} alone: `{n}`" for g, n in method["by_group"].items())
    lines += ["", f"Chosen on every set: `{method['chosen']}`; {alone}."]
    for name, why in method.get("notes", {}).items():
        lines.append(f"`{name}`: {why}.")
    return lines


def dev_settings(method: Mapping[str, Any]) -> dict[str, EfficientRAGConfig]:
    """Every candidate's loop settings (with the kept models), as ``adapt.json`` recorded them."""
    return {
        n: load_config(EfficientRAGConfig, data=c["efficientrag"]) for n, c in method["candidates"].items()
    }


def evaluate_on_dev(
    method: Mapping[str, Any], retriever: Any, examples: Sequence[Any], out: Path
) -> dict[str, list[Record]]:
    """Each candidate run on the dev questions (a run folder each, resumable)."""
    from efficientrag.eval.job_runs import evaluate_efficientrag_run

    runs = {}
    for name, cfg in dev_settings(method).items():
        evaluate_efficientrag_run(cfg, retriever, examples, out / name, progress=False)
        runs[name] = list(read_jsonl(out / name / "predictions.jsonl"))
    return runs


Scores = tuple[list[float], list[float]]  # per question: recalls, all-gold rates

# The search's own top 10, the deploy-nothing reference at 10 chunks (Direct-R@10).
SEARCH_K = 10
SEARCH_ROW = f"search top {SEARCH_K}"


def _per_question(records: Sequence[Record], held: bool = False) -> Scores:
    """Per question recall and all-gold, of every question or of those held back from design."""
    kept = [r for r in records if held_back(r["id"])] if held else list(records)
    scores = question_scores(kept)
    return [r for r, _ in scores], [g for _, g in scores]


def _gaps(a: Scores, b: Scores, resamples: int) -> list[str]:
    """The paired recall and all-gold gaps (a minus b), each with its 95% interval and verdict;
    blank cells where there is no question to pair."""
    if not a[0]:
        return ["", ""]
    return [paired_bootstrap(x, y, resamples=resamples).cell() for x, y in zip(a, b, strict=True)]


def dev_lines(
    runs: Mapping[str, Sequence[Record]],
    chosen: str,
    seconds: Mapping[str, float],
    search: Sequence[Record] | None = None,
    resamples: int = 10_000,
) -> list[str]:
    """Every candidate on the dev questions, with paired gaps against the one-hop reranker, on every
    question and on those held back from design; then, given the search's ranked run, each
    candidate against the search's top 10.

    Args:
        runs: Each candidate's dev records (``labeler_rerank`` among them), the same questions in
            the same order.
        chosen: The candidate adapt chose.
        seconds: Each candidate's seconds per question.
        search: The search's own ranked run on the same questions (read at its top 10), or None.
        resamples: Bootstrap resamples per interval.
    """
    ids = [r["id"] for r in runs[LABELER_RERANK]]
    for name, records in [*runs.items(), *([(SEARCH_ROW, search)] if search is not None else [])]:
        if [r["id"] for r in records] != ids:
            raise ValueError(f"{name}: its dev run holds other questions than labeler_rerank's")
    n_held = sum(held_back(i) for i in ids)
    # Each run's per-question scores, on every question and on the held-back ones, computed once.
    scores = {name: (_per_question(r), _per_question(r, True)) for name, r in runs.items()}
    ref, ref_held = scores[LABELER_RERANK]
    lines = [
        "| method on dev | recall / all-gold | chunks | Labeler pairs / q | s / q | vs `labeler_rerank`: "
        f"recall [95%] | all-gold [95%] | held back ({n_held} q): recall | all-gold |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, records in runs.items():
        s = summarize(records)
        gaps = ["", "", "", ""]
        if name != LABELER_RERANK:
            gaps = _gaps(scores[name][0], ref, resamples) + _gaps(scores[name][1], ref_held, resamples)
        mark = " (chosen)" if name == chosen else ""
        lines.append(
            f"| {name}{mark} | {s['recall']:.1f} / {s['all_gold']:.1f} | {s['num_chunks']:.2f} | "
            f"{s['labeler_pairs']:.1f} | {seconds.get(name, float('nan')):.3f} | " + " | ".join(gaps) + " |"
        )
    if search is not None:
        lines += ["", *_search_lines(scores, search, resamples)]
    return lines


def _search_lines(
    scores: Mapping[str, tuple[Scores, Scores]], search: Sequence[Record], resamples: int
) -> list[str]:
    """Each candidate (its per-question scores, whole and held back) against the search's own top
    10 (its chunks against 10), paired."""
    top = [{**r, "retrieved_ids": list(r["retrieved_ids"])[:SEARCH_K]} for r in search]
    ref, ref_held = _per_question(top), _per_question(top, True)
    lines = [
        f"Against the search's own top {SEARCH_K} ({mean(ref[0]):.1f} / {mean(ref[1]):.1f} at {SEARCH_K} chunks):",
        "",
        "| method on dev | recall [95%] | all-gold [95%] | held back: recall | all-gold |",
        "|---|---|---|---|---|",
    ]
    for name, (whole, held) in scores.items():
        gaps = _gaps(whole, ref, resamples) + _gaps(held, ref_held, resamples)
        lines.append(f"| {name} | " + " | ".join(gaps) + " |")
    return lines


# The stages a hop's time is split into ("encode" and "search" are parts of "retrieval").
STAGES = ("retrieval", "rerank", "labeler", "filter")


def seconds_per_question(records: Sequence[Record]) -> float:
    """The runs' own seconds per question: their traces' stage timings (each question's share of its
    batch), summed."""
    total = 0.0
    for r in records:
        for hop in r["trace"]["hops"]:
            total += sum(hop.get("timings_s", {}).get(k, 0.0) for k in STAGES)
    return total / max(1, len(records))


def method_lines(summary: Mapping[str, Any], retriever: Any, examples: Sequence[Any], out: Path) -> list[str]:
    """An adapt run's retrieval method choice, and every candidate run on ``examples`` (the target's
    dev questions) under ``out``, beside the search's own top 10; nothing when adapt made no choice.

    Args:
        summary: ``adapt.json``'s content.
        retriever: The search over the dev questions' corpus.
        examples: The dev questions.
        out: Where the candidates' dev runs go (one folder each; the search's in ``search_top``).
    """
    method = summary.get("method", {})
    if not method.get("candidates"):
        return []
    return [*choice_lines(method), "", *dev_section(method, retriever, examples, out)]


def dev_section(method: Mapping[str, Any], retriever: Any, examples: Sequence[Any], out: Path) -> list[str]:
    """Every candidate of a method choice (``adapt.json``'s ``method``) run on ``examples`` under
    ``out``, with paired gaps against the one-hop reranker and the search's own top 10."""
    from efficientrag.baselines.direct_r import DirectRetrieval
    from efficientrag.eval.job_runs import evaluate_ranked_run

    runs = evaluate_on_dev(method, retriever, examples, out)
    seconds = {name: seconds_per_question(records) for name, records in runs.items()}
    search_order = DirectRetrieval.ranking(retriever, [SEARCH_K])
    evaluate_ranked_run(search_order, examples, out / "search_top", ks=[SEARCH_K], progress=False)
    search = list(read_jsonl(out / "search_top" / "predictions.jsonl"))
    return dev_lines(runs, method["chosen"], seconds, search)
