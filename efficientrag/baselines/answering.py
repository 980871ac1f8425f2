"""The answer call from retrieved chunks, shared by every method that reads documents.

:func:`context_chunks` decides what the model reads (unique chunks in retrieval order, cut at k),
:func:`answer_from_chunks` makes the batched calls, and :class:`AnswerWithContext` adds one answer
call to any retrieval-only method: Direct-R (answers from its top 10 while its full ranked list is
still scored at every k) and EfficientRAG (answers from every chunk its loop kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from efficientrag.baselines.base import Method, Prediction
from efficientrag.baselines.cost import CostLedger
from efficientrag.baselines.prompts import PromptLibrary, PromptSet
from efficientrag.baselines.qa_base import (
    ANSWER_PREFIX,
    GeneratorSource,
    LLMMethod,
    answer_trace,
    read_answer,
)
from efficientrag.data.schema import Chunk, Example
from efficientrag.llm.answers import ExtractedAnswer
from efficientrag.llm.generator import Generation

if TYPE_CHECKING:
    from efficientrag.experiment import ExperimentConfig


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
    method: LLMMethod,
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


class AnswerWithContext(LLMMethod):
    """Runs a retrieval method, then one answer call per question over its chunks.

    The inner prediction is kept whole (its ranked list, scores, trace and counters); the answer
    call's cost is added to its counters and what the model read is recorded in the trace.
    """

    def __init__(
        self,
        inner: Method,
        generator: GeneratorSource,
        prompts: PromptLibrary | None = None,
        *,
        top_k: int | None = None,
        max_new_tokens: int = 128,
        chat: bool = True,
        temperature: float = 0.0,
        name: str | None = None,
    ) -> None:
        super().__init__(generator, prompts, chat=chat, temperature=temperature)
        self.inner = inner
        self.top_k = top_k
        self.max_new_tokens = max_new_tokens
        # A different name from the retrieval-only run, so the two never share an output folder.
        self.name = name or f"{inner.name}_qa"

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        preds = self.inner.run_batch(examples)
        if len(preds) != len(examples):
            raise RuntimeError(
                f"{self.inner.name} returned {len(preds)} predictions for {len(examples)} questions"
            )
        ledger = CostLedger(len(examples))
        sets = [self.prompts.for_example(ex) for ex in examples]
        contexts = [context_chunks(p.chunks, self.top_k) for p in preds]
        answers = answer_from_chunks(
            self,
            ledger,
            range(len(examples)),
            sets,
            [ex.question for ex in examples],
            contexts,
            max_new_tokens=self.max_new_tokens,
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


def with_answer_call(
    cfg: ExperimentConfig,
    method: Method,
    generator: GeneratorSource,
    *,
    top_k: int | None,
    max_new_tokens: int,
) -> Method:
    """``method`` itself unless ``eval.answer`` is on; then it answers too (and is judged when
    ``baselines.judge.enabled``)."""
    if not cfg.eval.answer:
        return method
    from efficientrag.eval.judge import maybe_judged

    b = cfg.baselines
    answering = AnswerWithContext(
        method,
        generator,
        PromptLibrary(b.prompts),
        top_k=top_k,
        max_new_tokens=max_new_tokens,
        chat=b.prompts.chat,
        temperature=b.temperature,
    )
    return maybe_judged(cfg, answering)
