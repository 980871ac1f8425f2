"""Tables of ``benchmarks/retrieval_rerank.py``: EfficientRAG beside the rerankers at equal chunks.

Every comparison is read at the loop's own chunk count (a ranked method's curve interpolated
between its measured cut-offs), on all questions of a dev set and per question type, with the
seconds per question beside each method.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from report_output import heading
from rerank_fusion import fusion_table

from efficientrag.eval.chunk_curve import curve_from_ranked, value_at
from efficientrag.eval.summary import aggregate_retrieval

ALL = "all"
SHOWN_KS = ("2", "4", "6", "7", "8", "10")
METRICS = ("recall", "all_gold", "answer_recall")
# HotpotQA's IRCoT dev file names no question type; the original distractor file does, for the
# first 100 of its questions (all among the 350). The rest are reported as untyped.
TYPE_FILES = {"hotpotqa": "hotpotqa/hotpot_dev_distractor_v1.first100.json"}


def question_type(record: Mapping[str, Any]) -> str:
    """HotpotQA and 2Wiki name their question types; MuSiQue's id says how many hops (``2hop__``)."""
    rid = str(record.get("id") or "")
    if "hop" in rid.split("__")[0]:
        return rid.split("__")[0][:4]  # 2hop, 3hop, 4hop
    return str(record.get("type") or "untyped")


def known_types(shared_data: str | Path, dataset: str) -> dict[str, str]:
    """Question id -> type from ``TYPE_FILES`` (empty where the dataset's dev file names its types)."""
    path = Path(shared_data) / TYPE_FILES[dataset] if dataset in TYPE_FILES else None
    if path is None or not path.is_file():
        return {}
    return {str(r["_id"]): str(r["type"]) for r in json.loads(path.read_text(encoding="utf-8"))}


def seconds_per_question(summary: Mapping[str, Any]) -> float:
    """Every timed stage of a run, per question (search, scoring, Labeler, Filter ...), each once."""
    from efficientrag.baselines.cost import latency_s

    return latency_s(summary.get("counters_mean") or {})


def run_seconds(run: Mapping[str, Any]) -> float:
    """A method's seconds per question: timed side by side with the others where the benchmark did
    (``timed_s``), else its run's own stage timings."""
    timed = run.get("timed_s")
    return float(timed) if timed is not None else seconds_per_question(run["summary"])


def retrieval_by_cut(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``summary["retrieval"]`` of a subset of a run's records: the means at each cut-off."""
    cuts: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        for cut, scores in (r.get("retrieval") or {}).items():
            cuts.setdefault(cut, []).append(scores)
    return {cut: aggregate_retrieval(rows) for cut, rows in cuts.items()}


def at_chunks(retrieval: Mapping[str, Mapping[str, float]], chunks: float) -> dict[str, float] | None:
    """A ranked run read at ``chunks`` (None where that is outside its measured cut-offs)."""
    try:
        return {m: value_at(curve_from_ranked(retrieval, m), chunks) for m in METRICS}
    except ValueError:
        return None


def render(
    *,
    command: str,
    retriever: str,
    train_on: Sequence[str],
    setting: tuple[str, list[str]],
    loop_scores: Mapping[str, float],
    validation_n: Mapping[str, int],
    reranker: Mapping[str, Any],
    results: Mapping[str, Mapping[str, Any]],
    minutes: float,
    timed_on: int = 0,
    notes: Sequence[str] = (),
) -> str:
    label, overrides = setting
    seconds = (
        f"every method timed side by side on the first {timed_on} questions of each set, in one process, "
        "models loaded first, no prediction cache"
        if timed_on
        else "each run's own stage timings, taken when the run was made"
    )
    recipes = ", ".join(f"{n} {r['best_score']:.2f}" for n, r in reranker["recipes"].items())
    lines = [
        *heading(
            f"## EfficientRAG beside retrieve-then-rerank on dev questions (search: {retriever})",
            command,
            minutes,
        ),
        f"Trained on the train files of {', '.join(train_on)}. EfficientRAG's setting, chosen on their "
        f"validation questions ({', '.join(f'{k} {v}' for k, v in validation_n.items())}; protocol score "
        f"{', '.join(f'{k} {v:.2f}' for k, v in loop_scores.items())}): `{label}` = "
        f"`{','.join(overrides)}`. Cross-encoder recipe chosen on the same questions (validation score, "
        f"mean of recall and all-gold@6 of the top 20): {recipes}; used: {reranker['recipe']}. No dev "
        f"question chose anything. Numbers in %; s/q: seconds per question on this machine ({seconds}).",
    ]
    if reranker.get("fusion"):
        lines += [
            "",
            *fusion_table(
                reranker["fusion"],
                reranker["fusion_validation"],
                reranker.get("fusion_left_out"),
                reranker.get("pseudo"),
            ),
        ]
    for note in notes:
        lines += ["", note]
    for dataset, runs in results.items():
        where = "in domain" if dataset.split()[0] in train_on else "left out"
        lines += ["", *dataset_tables(dataset, where, runs)]
    return "\n".join(lines) + "\n"


def dataset_tables(dataset: str, where: str, runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    eff = runs["EfficientRAG"]["summary"]
    e = eff["retrieval"][ALL]
    chunks = float(e["num_chunks"])
    lines = [
        f"### {dataset} ({eff['n']} {'questions' if ' ' in dataset else 'dev questions'}, {where})",
        "",
        "Recall / all-gold at K chunks:",
        "",
        "| method | " + " | ".join(f"K={k}" for k in SHOWN_KS) + " | s/q |",
        "|---|" + "---|" * (len(SHOWN_KS) + 1),
    ]
    ranked = {name: r for name, r in runs.items() if ALL not in r["summary"]["retrieval"]}
    loops = {
        name: r for name, r in runs.items() if ALL in r["summary"]["retrieval"] and name != "EfficientRAG"
    }
    for name, run in ranked.items():
        ret = run["summary"]["retrieval"]
        cells = [f"{ret[k]['recall']:.1f} / {ret[k]['all_gold']:.1f}" if k in ret else "–" for k in SHOWN_KS]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {run_seconds(run):.3f} |")
    lines += [
        "",
        f"At EfficientRAG's own chunk count ({chunks:.2f} per question):",
        "",
        "| method | recall | all-gold | answer recall | s/q |",
        "|---|---|---|---|---|",
        f"| **EfficientRAG** | {e['recall']:.1f} | {e['all_gold']:.1f} | {e['answer_recall']:.1f} | "
        f"{run_seconds(runs['EfficientRAG']):.3f} |",
    ]
    for name, run in loops.items():
        o = run["summary"]["retrieval"][ALL]
        lines.append(
            f"| {name} ({float(o['num_chunks']):.2f} chunks) | {o['recall']:.1f} | {o['all_gold']:.1f} | "
            f"{o['answer_recall']:.1f} | {run_seconds(run):.3f} |"
        )
    for name, run in ranked.items():
        read = at_chunks(run["summary"]["retrieval"], chunks)
        if read is not None:
            lines.append(
                f"| {name} @{chunks:.2f} | {read['recall']:.1f} | {read['all_gold']:.1f} | "
                f"{read['answer_recall']:.1f} | {run_seconds(run):.3f} |"
            )
    lines += ["", *type_table(runs)]
    return lines


def type_table(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Recall / all-gold per question type, every ranked method read at the loop's chunk count for
    that type."""
    types = sorted({question_type(r) for r in runs["EfficientRAG"]["records"]})
    names = [n for n in runs if ALL not in runs[n]["summary"]["retrieval"]]
    lines = [
        "By question type (recall / all-gold; the ranked methods at EfficientRAG's chunk count for the type):",
        "",
        "| type | n | chunks | EfficientRAG | " + " | ".join(names) + " |",
        "|---|---|---|---|" + "---|" * len(names),
    ]
    for t in types:
        own = [r for r in runs["EfficientRAG"]["records"] if question_type(r) == t and r.get("retrieval")]
        agg = aggregate_retrieval([r["retrieval"][ALL] for r in own])
        if not agg:
            continue
        chunks = float(agg["num_chunks"])
        cells = []
        for name in names:
            mine = [r for r in runs[name]["records"] if question_type(r) == t]
            read = at_chunks(retrieval_by_cut(mine), chunks)
            cells.append("–" if read is None else f"{read['recall']:.1f} / {read['all_gold']:.1f}")
        lines.append(
            f"| {t} | {agg['n']} | {chunks:.2f} | {agg['recall']:.1f} / {agg['all_gold']:.1f} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def plot_dataset(dataset: str, where: str, runs: Mapping[str, Mapping[str, Any]], path: Any) -> Any:
    """Recall against chunks per question: each ranked method's curve up to K=10, the loop's points."""
    from efficientrag.eval.plots import Point, plot_recall_vs_chunks

    curves = {
        name: [(float(k), float(v["recall"])) for k, v in run["summary"]["retrieval"].items() if int(k) <= 10]
        for name, run in runs.items()
        if ALL not in run["summary"]["retrieval"]
    }
    points = [
        Point(name, float(r["num_chunks"]), float(r["recall"]))
        for name, run in runs.items()
        if (r := run["summary"]["retrieval"].get(ALL))
    ]
    # A plain dataset name is its dev set; "open-domain" (train questions) and "after adaptation" say what they are.
    label = dataset if " " in dataset else f"{dataset} dev"
    return plot_recall_vs_chunks(curves, points, [], path, title=f"{label} ({where}): recall vs chunks")
