"""What a synthesis run produced, per dataset: sizes, label balance, alignment, rejects.

Written to ``<out_dir>/stats.json`` by the build stage; the numbers in ``docs/synthesis.md`` come
from these files.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from efficientrag.models.inputs import TAG_CONTINUE, TAG_TERMINATE
from efficientrag.synth.build import SPLITS, BuiltSets
from efficientrag.synth.records import question_id_of, sub_question_id

ALL = "all"


def distribution(values: Sequence[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    arr = np.asarray(values, dtype=float)
    q = np.quantile(arr, [0.1, 0.5, 0.9])
    return {
        "n": int(arr.size),
        "mean": round(float(arr.mean()), 4),
        "min": round(float(arr.min()), 4),
        "p10": round(float(q[0]), 4),
        "p50": round(float(q[1]), 4),
        "p90": round(float(q[2]), 4),
    }


Records = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class StageOutputs:
    """What the build stage reads: each stage's records by id (question ids for ``decomposed``,
    sub-question ids for the others)."""

    decomposed: Records
    aligned: Records
    next_hop: Records
    negatives: Records


def synthesis_stats(
    question_ids: Sequence[str],
    dataset_of: Mapping[str, str],
    outputs: StageOutputs,
    rejects: Mapping[str, Iterable[Mapping[str, Any]]],
    built: BuiltSets,
) -> dict[str, Any]:
    groups: dict[str, list[str]] = defaultdict(list)
    for qid in question_ids:
        groups[dataset_of.get(qid, "")].append(qid)
    selected = set(question_ids)
    reject_list = {
        stage: [r for r in recs if question_id_of(str(r["id"])) in selected]
        for stage, recs in rejects.items()
    }
    out: dict[str, Any] = {}
    names = sorted(groups) + ([ALL] if len(groups) > 1 else [])
    for name in names:
        qids = set(question_ids) if name == ALL else set(groups[name])
        out[name] = _group_stats(qids, outputs, reject_list, built)
    return out


def _group_stats(
    qids: set[str], outputs: StageOutputs, rejects: Mapping[str, list[Mapping[str, Any]]], built: BuiltSets
) -> dict[str, Any]:
    decomposed = outputs.decomposed
    subs = [
        sub_question_id(qid, int(s["idx"]))
        for qid in sorted(qids)
        if qid in decomposed
        for s in decomposed[qid]["sub_questions"]
    ]
    dependent = {
        sub_question_id(qid, int(s["idx"]))
        for qid in qids
        if qid in decomposed
        for s in decomposed[qid]["sub_questions"]
        if s.get("dependency")
    }
    lab_rows = {s: [r for r in built.labeler[s] if r["question_id"] in qids] for s in SPLITS}
    fil_rows = {s: [r for r in built.filter[s] if r["question_id"] in qids] for s in SPLITS}
    all_lab = [r for s in SPLITS for r in lab_rows[s]]
    all_fil = [r for s in SPLITS for r in fil_rows[s]]
    pos_rows = [r for r in all_lab if r["tag"] == TAG_CONTINUE]
    have_pos = {r["id"].rsplit("/", 1)[0] for r in pos_rows}
    have_neg = {r["id"].rsplit("/", 1)[0] for r in all_lab if r["tag"] == TAG_TERMINATE}
    have_fil = {r["id"] for r in all_fil}
    complete = 0
    for qid in qids:
        if qid not in decomposed:
            continue
        ids = [sub_question_id(qid, int(s["idx"])) for s in decomposed[qid]["sub_questions"]]
        if all(i in have_pos and i in have_neg and (i not in dependent or i in have_fil) for i in ids):
            complete += 1
    al_recs = [outputs.aligned[s] for s in subs if s in outputs.aligned]
    nh_recs = [outputs.next_hop[s] for s in subs if s in outputs.next_hop]
    neg_recs = [outputs.negatives[s] for s in subs if s in outputs.negatives]
    hops = Counter(len(decomposed[q]["sub_questions"]) for q in qids if q in decomposed)
    return {
        "questions": {
            "selected": len(qids),
            "decomposed": sum(1 for q in qids if q in decomposed),
            "complete": complete,
            "sub_questions_per_question": {str(k): v for k, v in sorted(hops.items())},
        },
        "sub_questions": {
            "decomposed": len(subs),
            "dependent": len(dependent),
            "aligned": len(al_recs),
            "next_hop": len(nh_recs),
            "negatives": len(neg_recs),
        },
        "labeler": {
            **{s: len(lab_rows[s]) for s in SPLITS},
            "rows": len(all_lab),
            "tags": dict(Counter(r["tag"] for r in all_lab)),
            "positive_label_share": _share(pos_rows),
            "positive_label_share_all_rows": _share(all_lab),
            "chunk_words": distribution([len(r["chunk_words"]) for r in all_lab]),
            "labeled_words_per_positive": distribution([sum(r["labels"]) for r in pos_rows]),
        },
        "filter": {
            **{s: len(fil_rows[s]) for s in SPLITS},
            "rows": len(all_fil),
            "positive_label_share": _share(all_fil, words_key="words"),
        },
        "align_rate": distribution([float(r["align_rate"]) for r in al_recs]),
        "align_method": dict(Counter(str(r.get("align_method", "")) for r in al_recs)),
        "extract_method": dict(Counter(str(r.get("extract_method", "")) for r in al_recs)),
        "filter_align_rate": distribution(
            [float(r["filter_align_rate"]) for r in nh_recs if "filter_align_rate" in r]
        ),
        "negatives": {
            "rank": distribution([float(r["negative_rank"]) for r in neg_recs]),
            "skipped_for_answer": sum(int(r.get("skipped_answer", 0)) for r in neg_recs),
        },
        "rejects": {
            stage: dict(Counter(str(r["reason"]) for r in recs if question_id_of(str(r["id"])) in qids))
            for stage, recs in rejects.items()
        },
    }


def _share(rows: Sequence[Mapping[str, Any]], words_key: str = "chunk_words") -> float:
    total = sum(len(r[words_key]) for r in rows)
    ones = sum(sum(r["labels"]) for r in rows)
    return round(ones / total, 4) if total else 0.0
