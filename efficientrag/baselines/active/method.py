"""The base of every active method: prompt, budget, request helpers, the answer rule, and
``run_batch`` over :func:`~efficientrag.baselines.active.loop.drive`.

A subclass implements :meth:`ActiveMethod.program`, the per-question logic, and sets ``needs``
(the generator capabilities it reads). After its program ends, every method gets the same answer
rule (DRAGIN, App. B): when the text never says "So the answer is", the phrase is appended and the
model writes ``answer_retry_tokens`` more tokens, with the exemplars and the question but no
documents (it is DRAGIN's evaluation-time fix-up, applied the same way to all methods).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from efficientrag.baselines.active.config import ActiveCommon
from efficientrag.baselines.active.exemplars import exemplar_set, take
from efficientrag.baselines.active.loop import Generate, Program, Retrieve, Session, drive
from efficientrag.baselines.active.prompts import ANSWER_PHRASE, PromptBuilder, RenderedPrompt
from efficientrag.baselines.active.queries import QueryTrimmer
from efficientrag.baselines.active.sentences import (
    answer_sentence_end,
    says_answer,
    tokens_through,
    word_pieces,
)
from efficientrag.baselines.base import Prediction
from efficientrag.data.schema import Chunk, Example
from efficientrag.llm.generator import Generation, Generator, GeneratorCapabilityError
from efficientrag.retrieval.base import Retriever


class ActiveMethod(ABC):
    name = "active"
    # Generator capabilities the method reads (checked when it is built).
    needs: dict[str, bool] = {}

    def __init__(
        self,
        retriever: Retriever | None,
        generator: Generator,
        cfg: ActiveCommon,
        *,
        dataset: str = "",
    ) -> None:
        generator.supports.require(method=self.name, generator=generator.name, **self.needs)
        if not generator.supports.raw_completion:
            raise GeneratorCapabilityError(
                f"{self.name} continues a plain-text prompt token by token, which generator {generator.name!r} "
                "is configured not to do; set generator.openai.completions_for_text=true (vLLM and llama.cpp "
                "serve /v1/completions) or use a local model"
            )
        self.retriever = retriever
        self.generator = generator
        self.cfg = cfg
        self.dataset = dataset
        self.exemplars = take(exemplar_set(cfg.exemplars, dataset), cfg.num_exemplars)
        self.prompts = PromptBuilder(self.exemplars, max_doc_words=cfg.max_doc_words)
        self.trim_query = QueryTrimmer(cfg.max_query_tokens, getattr(generator, "tokenizer", None))
        # A local model returns every token it generated, so different budgets can share one call.
        self.merge_budgets = bool(generator.supports.attention)

    # -- running ------------------------------------------------------------------------------------

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        sessions = [Session(ex) for ex in examples]
        programs = [self._whole(s) for s in sessions]
        drive(programs, sessions, self.generator, self.retriever, merge_budgets=self.merge_budgets)
        return [s.prediction() for s in sessions]

    @abstractmethod
    def program(self, s: Session) -> Program:
        """The per-question logic: yields requests, writes the answer into ``s``."""

    def _whole(self, s: Session) -> Program:
        yield from self.program(s)
        yield from self.complete_answer(s)

    # -- helpers for programs -------------------------------------------------------------------------

    def remaining_for(self, s: Session) -> int:
        return max(0, self.cfg.max_new_tokens - s.answer_tokens)

    def render(self, s: Session, docs: Sequence[Chunk] = (), answer: str | None = None) -> RenderedPrompt:
        return self.prompts.render(s.question, docs, s.answer if answer is None else answer)

    def generate(
        self, s: Session, docs: Sequence[Chunk], max_new_tokens: int, *, kind: str = "answer", **flags: Any
    ) -> Generate:
        return Generate(
            self.render(s, docs).text,
            max_new_tokens=max_new_tokens,
            stop=tuple(self.cfg.stop),
            kind=kind,
            **flags,
        )

    def retrieve(self, *queries: str) -> Retrieve:
        return Retrieve(tuple(queries), self.cfg.top_k)

    def usable(self, g: Generation) -> list[str]:
        """The generated tokens as text pieces that join to the text (checked: every decision
        about tokens relies on it). An API asked for no logprobs returns no tokens; its text is
        then split into whitespace-led words."""
        if g.tokens is None:
            return word_pieces(g.text)
        if "".join(g.tokens) != g.text:
            raise GeneratorCapabilityError(
                f"generator {self.generator.name} returned tokens that do not join to its text "
                f"({''.join(g.tokens)[:60]!r} vs {g.text[:60]!r}); {self.name} needs token-aligned output"
            )
        return list(g.tokens)

    def through_answer(self, pieces: Sequence[str], finished: bool) -> tuple[int, bool]:
        """How many of ``pieces`` to consider: all of them, or up to the end of the sentence that
        states the answer. Also whether that answer sentence is complete."""
        text = "".join(pieces)
        end = answer_sentence_end(text, finished)
        if end is None:
            return len(pieces), False
        return tokens_through(pieces, end), True

    def complete_answer(self, s: Session) -> Program:
        """DRAGIN's answer rule (see the module docstring)."""
        text = s.answer
        if says_answer(text) or self.cfg.answer_retry_tokens == 0:
            s.final_text = text
            return
        base = text.rstrip() + " " + ANSWER_PHRASE
        g = yield Generate(
            self.render(s, (), answer=base).text,
            max_new_tokens=self.cfg.answer_retry_tokens,
            stop=("\n",),
            kind="answer_retry",
        )
        s.final_text = base + g.text
        s.log(kind="answer_retry", text=g.text)
