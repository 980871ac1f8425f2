"""The training sets: Labeler rows and Filter rows, split by question, as ``datasets``-loadable JSONL.

Per sub-question that came through every stage, as in the official ``training_data_synthesize``:
- a Labeler positive: the query of its hop, its gold chunk's words and labels, tag ``continue``;
- a Labeler negative (when the negatives stage found one): the same query, the hard negative's
  words, all labels 0, tag ``terminate`` (one per further negative with ``negatives_per_query``);
- with ``question_positives``, for a later hop's sub-question also the original question paired
  with its gold chunk (same labels), tag ``continue``: the loop's first query meets that chunk too;
- a Filter row for every dependent sub-question: the ``Query: … Info: …`` words and the labels of
  the next-hop query in them.
Files: ``labeler/{train,validation}.jsonl``, ``filter/{train,validation}.jsonl`` (rows as
:class:`efficientrag.models.inputs.LabelerRow` / ``FilterRow`` dicts), loadable with
``datasets.load_dataset("json", data_files={"train": ..., "validation": ...})`` or, as one
``DatasetDict``, with :func:`efficientrag.training.load_training_set`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from efficientrag.data.split import TRAIN, VALIDATION, split_of
from efficientrag.jsonl import write_jsonl
from efficientrag.models.inputs import TAG_CONTINUE, TAG_TERMINATE, FilterRow, LabelerRow
from efficientrag.synth.records import sub_question_id
from efficientrag.text.words import split_words

SPLITS = (TRAIN, VALIDATION)


@dataclass
class BuiltSets:
    labeler: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {s: [] for s in SPLITS})
    filter: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {s: [] for s in SPLITS})
    files: dict[str, str] = field(default_factory=dict)


def build_rows(
    question_ids: Sequence[str],
    decomposed: Mapping[str, Mapping[str, Any]],
    aligned: Mapping[str, Mapping[str, Any]],
    next_hop: Mapping[str, Mapping[str, Any]],
    negatives: Mapping[str, Mapping[str, Any]],
    *,
    validation_ratio: float,
    seed: int,
    question_positives: bool = False,
) -> BuiltSets:
    built = BuiltSets()
    for qid in question_ids:
        rec = decomposed.get(qid)
        if rec is None:
            continue
        side = split_of(qid, validation_ratio=validation_ratio, seed=seed)
        for sub in rec["sub_questions"]:
            sid = sub_question_id(qid, int(sub["idx"]))
            al, nh = aligned.get(sid), next_hop.get(sid)
            if al is None or nh is None:
                continue
            meta = {
                "dataset": rec.get("dataset", ""),
                "type": rec.get("type", ""),
                "idx": int(sub["idx"]),
                "hop": int(nh["hop"]),
            }
            positive_queries = [("pos", list(nh["query_words"]))]
            question_words = split_words(str(rec.get("question", "")))
            if question_positives and question_words and question_words != positive_queries[0][1]:
                positive_queries.append(("qpos", question_words))
            for suffix, query_words in positive_queries:
                built.labeler[side].append(
                    LabelerRow(
                        id=f"{sid}/{suffix}",
                        question_id=qid,
                        query_words=query_words,
                        chunk_words=list(al["chunk_words"]),
                        labels=[int(x) for x in al["labels"]],
                        tag=TAG_CONTINUE,
                        chunk_id=str(al["chunk_id"]),
                        meta={**meta, "rank": 0},
                    ).to_dict()
                )
            neg = negatives.get(sid)
            if neg is not None:
                for j, choice in enumerate([neg, *neg.get("more_negatives", [])]):
                    words = list(choice["negative_chunk_words"])
                    built.labeler[side].append(
                        LabelerRow(
                            id=f"{sid}/neg" if j == 0 else f"{sid}/neg{j + 1}",
                            question_id=qid,
                            query_words=list(nh["query_words"]),
                            chunk_words=words,
                            labels=[0] * len(words),
                            tag=TAG_TERMINATE,
                            chunk_id=str(choice["negative_chunk_id"]),
                            meta={**meta, "rank": int(choice["negative_rank"])},
                        ).to_dict()
                    )
            if "filter_words" in nh:
                built.filter[side].append(
                    FilterRow(
                        id=sid,
                        question_id=qid,
                        words=list(nh["filter_words"]),
                        labels=[int(x) for x in nh["filter_labels"]],
                        meta=meta,
                    ).to_dict()
                )
    return built


def write_sets(built: BuiltSets, out_dir: str | Path) -> dict[str, str]:
    out = Path(out_dir)
    files = {}
    for model, rows_by_split in (("labeler", built.labeler), ("filter", built.filter)):
        for split in SPLITS:
            path = out / model / f"{split}.jsonl"
            write_jsonl(path, rows_by_split[split])
            files[f"{model}/{split}"] = str(path)
    built.files = files
    return files
