"""The answer call from retrieved chunks, shared by every method that reads documents.

:func:`context_chunks` decides what the model reads (unique chunks in retrieval order, cut at k),
:func:`answer_from_chunks` makes the batched calls, and :func:`answer_if_asked` adds one answer call
to the predictions of a retrieval-only method when the run asks for answers: Direct-R (answers from
its top 10 while its full ranked list is still scored at every k) and EfficientRAG (answers from
every chunk its loop kept).
"""

from __future__ import annotations

from collections.abc import Sequence

from efficientrag.baselines.base import Method, Prediction
from efficientrag.baselines.cost import CostLedger
from efficientrag.baselines.prompts import PromptSet
from efficientrag.baselines.replies import ANSWER_PREFIX, answer_trace, read_answer
from efficientrag.data.schema import Chunk, Example
from efficientrag.llm.answers import ExtractedAnswer
from efficientrag.llm.generator import Generation


def context_chunks(chunks: Sequence[Chunk], top_k: int | None = None) -> list[Chunk]:
    """Unique chunks (first occurrence wins, so retrieval order is kept), at most ``top_k``."""
    seen: set[str] = set()
    out: list[Chunk] = []
    for chunk in chunks:
        if chunk.id in seen:
            continue
        seen.add(chunk.id)
        out.append(chunk)
        if top_k is not None and len(out) >= top_k:
            break
    return out


def answer_from_chunks(
    method: Method,
    ledger: CostLedger,
    owners: Sequence[int],
    prompt_sets: Sequence[PromptSet],
    questions: Sequence[str],
    contexts: Sequence[Sequence[Chunk]],
    *,
    max_new_tokens: int,
    stage: str = "answer",
) -> list[tuple[ExtractedAnswer, Generation]]:
    """One batched call answering ``questions[i]`` from ``contexts[i]`` for question ``owners[i]``."""
    prompts = [
        method.as_prompt(ps.answer(q, [c.contents for c in ctx]), ANSWER_PREFIX)
        for ps, q, ctx in zip(prompt_sets, questions, contexts, strict=True)
    ]
    gens = ledger.generate(
        method.generator,
        owners,
        prompts,
        stage=stage,
        max_new_tokens=max_new_tokens,
        temperature=method.temperature,
    )
    out = []
    for owner, gen in zip(owners, gens, strict=True):
        found = read_answer(gen.text)
        if found.source != "json":
            ledger.add(owner, "format_failures")
        out.append((found, gen))
    return out


def answer_if_asked(
    method: Method,
    examples: Sequence[Example],
    preds: list[Prediction],
    *,
    top_k: int | None,
    max_new_tokens: int,
) -> list[Prediction]:
    """``preds`` as they are unless the run asks for answers (``eval.answer``); then one answer call
    per question over its chunks. Each prediction is kept whole (its ranked list, scores, trace and
    counters); the call's cost is added to its counters and what the model read to its trace."""
    if not method.shared.answer:
        return preds
    ledger = CostLedger(len(examples))
    sets = [method.library.for_example(ex) for ex in examples]
    contexts = [context_chunks(p.chunks, top_k) for p in preds]
    answers = answer_from_chunks(
        method,
        ledger,
        range(len(examples)),
        sets,
        [ex.question for ex in examples],
        contexts,
        max_new_tokens=max_new_tokens,
    )
    for i, (pred, ps, ctx, (found, gen)) in enumerate(zip(preds, sets, contexts, answers, strict=True)):
        pred.answer = found.answer
        pred.raw_output = gen.text
        pred.trace["answer_call"] = {
            "prompt_family": ps.dataset,
            "context_ids": [c.id for c in ctx],
            **answer_trace(found),
        }
        for key, value in ledger.counters[i].items():
            pred.counters.add(key, value)
    return preds
