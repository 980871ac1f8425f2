"""The per-record function of each synthesis stage, and the inputs each stage reads.

Each ``*_step`` returns the ``fn`` that :func:`efficientrag.synth.stage.run_stage` calls per
record. Teacher calls may return awaitables (an LLM teacher); :func:`then` keeps one code path.
Records and their fields: ``records.py`` and ``docs/synthesis.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.retrieval.base import Retriever
from efficientrag.synth.align import align_words, split_targets
from efficientrag.synth.negatives import NegativeChoice, choose_negatives
from efficientrag.synth.next_hop import R_FILTER_ALIGN, filter_target
from efficientrag.synth.records import (
    DecomposedRecord,
    Decomposition,
    LabeledRecord,
    Reject,
    SubQuestion,
    question_id_of,
    sub_question_id,
    validate_decomposition,
)
from efficientrag.synth.stage import then
from efficientrag.synth.teacher.base import DependencyInfo, Extraction, Teacher
from efficientrag.text.words import join_words, split_words

R_NO_WORDS = "no words extracted"
R_NOT_ALIGNED = "extracted words not aligned"
R_EMPTY_QUERY = "empty next-hop query"


@dataclass
class StepContext:
    corpus: Corpus
    examples: dict[str, Example]
    teacher: Teacher
    min_align_rate: float = 0.8
    align_window: int = 150
    use_lemmas: bool = True


# -- decompose --------------------------------------------------------------------------------


def decompose_step(ctx: StepContext) -> Callable[[Example], Any]:
    def fn(example: Example) -> Any:
        return then(ctx.teacher.decompose(example), lambda d: _decomposed(ctx, example, d))

    return fn


def _decomposed(ctx: StepContext, example: Example, result: Decomposition) -> dict[str, Any]:
    subs = list(result.sub_questions)
    validate_decomposition(subs, example.gold_chunk_ids)
    record = DecomposedRecord(
        id=example.id,
        question=example.question,
        answers=list(example.answers),
        dataset=example.dataset,
        type=result.type or example.type,
        teacher=ctx.teacher.name,
        sub_questions=subs,
    )
    return record.to_dict()


# -- label ------------------------------------------------------------------------------------


def label_inputs(decomposed: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    items = []
    for rec in decomposed:
        for sub in rec["sub_questions"]:
            items.append(
                {"id": sub_question_id(rec["id"], int(sub["idx"])), "question_id": rec["id"], "sub": sub}
            )
    return items


def label_step(ctx: StepContext) -> Callable[[Mapping[str, Any]], Any]:
    def fn(item: Mapping[str, Any]) -> Any:
        example = ctx.examples[item["question_id"]]
        sub = SubQuestion.from_dict(item["sub"])
        chunk = ctx.corpus.get(sub.chunk_id)
        return then(ctx.teacher.extract_words(example, sub, chunk), lambda r: _labeled(item, sub, r))

    return fn


def _labeled(item: Mapping[str, Any], sub: SubQuestion, result: Extraction | Sequence[str]) -> dict[str, Any]:
    if isinstance(result, Extraction):
        words, indices, method = list(result.words), result.chunk_word_indices, result.method
    else:
        words, indices, method = [str(w) for w in result], None, ""
    if not [w for w in words if w.strip()]:
        raise Reject(R_NO_WORDS, f"sub-question {sub.idx}: {sub.sub_question!r}")
    return LabeledRecord(
        id=item["id"],
        question_id=item["question_id"],
        idx=sub.idx,
        chunk_id=sub.chunk_id,
        sub_question=sub.sub_question,
        answer=sub.answer,
        extracted_words=words,
        chunk_word_indices=list(indices) if indices is not None else None,
        extract_method=method,
    ).to_dict()


# -- align ------------------------------------------------------------------------------------


def align_step(ctx: StepContext) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    def fn(rec: Mapping[str, Any]) -> dict[str, Any]:
        chunk_words = split_words(ctx.corpus.get(rec["chunk_id"]).contents)
        extracted = list(rec["extracted_words"])
        indices = rec.get("chunk_word_indices")
        if indices is not None and _indices_match(indices, extracted, chunk_words):
            labels = [0] * len(chunk_words)
            for i in indices:
                labels[i] = 1
            rate, method = 1.0, "indices"
        else:
            al = align_words(extracted, chunk_words, window=ctx.align_window, use_lemmas=ctx.use_lemmas)
            labels, rate, method = al.labels, al.rate, "search"
            if rate < ctx.min_align_rate or not any(labels):
                missing = [
                    t
                    for t, m in zip(al.targets, al.matched, strict=True)
                    if m is None and any(c.isalnum() for c in t)
                ]
                raise Reject(
                    R_NOT_ALIGNED,
                    f"rate {rate:.2f} < {ctx.min_align_rate}; not in chunk: {' '.join(missing[:20])!r}",
                )
        out = dict(rec)
        out.update(chunk_words=chunk_words, labels=labels, align_rate=rate, align_method=method)
        return out

    return fn


def _indices_match(indices: Sequence[int], words: Sequence[str], chunk_words: Sequence[str]) -> bool:
    if len(indices) != len(words) or not indices:
        return False
    return all(0 <= i < len(chunk_words) and chunk_words[i] == w for i, w in zip(indices, words, strict=True))


def labeled_words(aligned: Mapping[str, Any]) -> list[str]:
    return [w for w, lab in zip(aligned["chunk_words"], aligned["labels"], strict=True) if lab]


# -- next hop ---------------------------------------------------------------------------------


def next_hop_inputs(
    decomposed: Iterable[Mapping[str, Any]], aligned: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One item per sub-question that has aligned labels (the others were rejected before)."""
    items = []
    for rec in decomposed:
        for sub in rec["sub_questions"]:
            sid = sub_question_id(rec["id"], int(sub["idx"]))
            if sid not in aligned:
                continue
            items.append(
                {
                    "id": sid,
                    "question_id": rec["id"],
                    "question": rec["question"],
                    "sub": sub,
                    "sub_questions": rec["sub_questions"],
                    "info_words": labeled_words(aligned[sid]),
                }
            )
    return items


def next_hop_depends_on(item: Mapping[str, Any]) -> list[str]:
    return [sub_question_id(item["question_id"], int(d)) for d in item["sub"].get("dependency") or []]


def next_hop_step(ctx: StepContext) -> Callable[[Mapping[str, Any], list[dict[str, Any]]], Any]:
    def fn(item: Mapping[str, Any], deps: list[dict[str, Any]]) -> Any:
        sub = SubQuestion.from_dict(item["sub"])
        base = {
            "id": item["id"],
            "question_id": item["question_id"],
            "idx": sub.idx,
            "dependency": list(sub.dependency),
            "info_words": list(item["info_words"]),
        }
        if not deps:
            return {**base, "hop": 1, "query": item["question"], "query_words": split_words(item["question"])}
        deps = sorted(deps, key=lambda d: int(d["idx"]))
        prev = max(deps, key=lambda d: (int(d["hop"]), int(d["idx"])))
        by_idx = {int(s["idx"]): SubQuestion.from_dict(s) for s in item["sub_questions"]}
        infos = [
            DependencyInfo(by_idx[int(d["idx"])], list(d["query_words"]), list(d["info_words"])) for d in deps
        ]
        example = ctx.examples[item["question_id"]]
        written = ctx.teacher.next_hop_query(example, sub, list(prev["query_words"]), infos)
        return then(written, lambda w: _next_hop_record(ctx, base, prev, infos, deps, w))

    return fn


def _next_hop_record(
    ctx: StepContext,
    base: dict[str, Any],
    prev: Mapping[str, Any],
    infos: list[DependencyInfo],
    deps: list[dict[str, Any]],
    written: Sequence[str] | str,
) -> dict[str, Any]:
    words = split_words(written) if isinstance(written, str) else split_targets(written)
    target = filter_target(prev["query_words"], [i.info_words for i in infos], words)
    rate = target.alignment.rate
    if not target.query_words:
        raise Reject(R_EMPTY_QUERY, f"teacher wrote {join_words(words)!r}")
    if rate < ctx.min_align_rate:
        raise Reject(R_FILTER_ALIGN, f"rate {rate:.2f} < {ctx.min_align_rate}: {join_words(words)!r}")
    return {
        **base,
        "hop": 1 + max(int(d["hop"]) for d in deps),
        "query": join_words(target.query_words),
        "query_words": target.query_words,
        "prev_query_id": prev["id"],
        "filtered_query": written if isinstance(written, str) else join_words(words),
        "filter_words": target.words,
        "filter_labels": target.labels,
        "filter_align_rate": rate,
    }


# -- negatives --------------------------------------------------------------------------------


def negatives_inputs(
    next_hop: Iterable[Mapping[str, Any]],
    decomposed: Mapping[str, Mapping[str, Any]],
    examples: Mapping[str, Example],
) -> list[dict[str, Any]]:
    items = []
    for rec in next_hop:
        qid = question_id_of(rec["id"])
        sub = next(s for s in decomposed[qid]["sub_questions"] if int(s["idx"]) == int(rec["idx"]))
        answers = SubQuestion.from_dict(sub).answers()
        items.append(
            {
                "id": rec["id"],
                "question_id": qid,
                "idx": rec["idx"],
                "query": rec["query"],
                "answers": answers,
                "gold": list(examples[qid].gold_chunk_ids),
            }
        )
    return items


def negatives_step(
    retriever: Retriever, *, top_k: int, exclude_answer: bool = True, per_query: int = 1
) -> Callable[[list[Mapping[str, Any]]], list[Any]]:
    """The first negative keeps the official record fields; further ones (``per_query > 1``) go
    in ``more_negatives`` with the same fields."""

    def fn(items: list[Mapping[str, Any]]) -> list[Any]:
        results = retriever.search([it["query"] for it in items], top_k)
        out: list[Any] = []
        for item, hits in zip(items, results, strict=True):
            try:
                choices = choose_negatives(
                    hits, set(item["gold"]), item["answers"], n=per_query, exclude_answer=exclude_answer
                )
            except Reject as rej:
                out.append(rej)
                continue
            first = choices[0]
            record = {
                "id": item["id"],
                "question_id": item["question_id"],
                "idx": item["idx"],
                "query": item["query"],
                **_negative_fields(first),
                "skipped_gold": first.skipped_gold,
                "skipped_answer": first.skipped_answer,
            }
            if per_query > 1:
                record["more_negatives"] = [_negative_fields(c) for c in choices[1:]]
            out.append(record)
        return out

    return fn


def _negative_fields(choice: NegativeChoice) -> dict[str, Any]:
    return {
        "negative_chunk_id": choice.hit.id,
        "negative_rank": choice.rank,
        "negative_score": float(choice.hit.score),
        "negative_chunk_words": split_words(choice.hit.chunk.contents),
    }
