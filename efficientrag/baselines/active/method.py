"""What every active method shares: its settings (:class:`ActiveCommon`), the prompt, the budget,
request helpers, the answer rule, and ``run_batch`` over
:func:`~efficientrag.baselines.active.loop.drive`.

A subclass implements :meth:`ActiveMethod.program`, the per-question logic, and sets ``needs``
(the generator capabilities it reads). After its program ends, every method gets the same answer
rule (DRAGIN, App. B): when the text never says "So the answer is", the phrase is appended and the
model writes ``answer_retry_tokens`` more tokens, with the exemplars and the question but no
documents (it is DRAGIN's evaluation-time fix-up, applied the same way to all methods).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from efficientrag.baselines.active.loop import Generate, Program, Retrieve, Session, drive
from efficientrag.baselines.active.queries import QueryTrimmer
from efficientrag.baselines.active.sentences import (
    answer_sentence_end,
    first_sentence_end,
    says_answer,
    tokens_through,
    word_pieces,
)
from efficientrag.baselines.base import Method, Prediction
from efficientrag.baselines.prompts.config import exemplar_family
from efficientrag.baselines.prompts.continuation import ANSWER_PHRASE, PromptBuilder, RenderedPrompt
from efficientrag.baselines.prompts.cot_exemplars import EXEMPLAR_SETS, exemplar_set, take
from efficientrag.baselines.settings import Settings
from efficientrag.data.schema import Chunk, Example
from efficientrag.llm.generator import Generation, GeneratorCapabilityError
from efficientrag.setting_fields import SettingError, bounded

EXEMPLAR_CHOICES = ("auto", *EXEMPLAR_SETS)
# A step's generated pieces, how many of them to keep, whether they complete the answer sentence,
# and whether the model stopped (:meth:`ActiveMethod.first_sentence`, :meth:`ActiveMethod.whole_step`).
Kept = tuple[list[str], int, bool, bool]


@dataclass
class ActiveCommon(Settings):
    """Settings every active method has, so a preset can give every method of one comparison the
    same prompt and budget, as DRAGIN's Table 1 does. Defaults: DRAGIN's Llama2-13b-chat HotpotQA
    setting (its Table 9: 100 tokens, 3 BM25 documents, 8 exemplars); FLARE's own defaults are in
    :class:`~efficientrag.baselines.flare.FlareConfig`. Presets under ``configs/paper/`` set the
    per-model, per-dataset values."""

    # Few-shot exemplar set: "auto" follows data.dataset (jsonl data gets the HotpotQA set).
    exemplars: str = "auto"
    num_exemplars: int = bounded(8, low=0)
    # Documents per retrieval.
    top_k: int = bounded(3, low=1)
    # The generation length: tokens of the whole answer (DRAGIN's "generate length", FLARE's
    # max_generation_len).
    max_new_tokens: int = bounded(100, low=1)
    # Each document is cut to this many words in the prompt (None: whole chunk).
    max_doc_words: int | None = bounded(None, low=1)
    # Retrieval queries keep only their last this-many tokens (the official codes use 64 tokens of
    # the LLM's tokenizer; whitespace words for an API generator). None: queries are not cut. The
    # first query of FLARE and SR/FL/FS-RAG, the question itself, is never cut.
    max_query_tokens: int | None = bounded(None, low=1)
    # DRAGIN's answer rule for every method: when the finished text never says "So the answer is",
    # the phrase is appended and this many more tokens are generated. 0 turns the rule off.
    answer_retry_tokens: int = bounded(32, low=0)
    # Generation stops at any of these (the exemplars are separated by a blank line).
    stop: list[str] = field(default_factory=lambda: ["\n\n", "\nQuestion:"])

    def __post_init__(self) -> None:
        self.exemplars = exemplar_family(self.exemplars)
        if self.exemplars not in EXEMPLAR_CHOICES:
            raise SettingError(f"exemplars must be one of {list(EXEMPLAR_CHOICES)}, got {self.exemplars!r}")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise SettingError(f"stop sequences must be non-empty strings, got {self.stop!r}")
        super().__post_init__()


class ActiveMethod(Method):
    name = "active"
    config_class = ActiveCommon
    cfg: ActiveCommon
    # Generator capabilities the method reads (checked when it is built).
    needs: dict[str, bool] = {}
    # FLARE's and DRAGIN's papers give one table per generator model.
    paper_rows_per_model = True

    def setup(self) -> None:
        """Builds the generator now (its capabilities decide whether the method can run), then the
        exemplars and the prompt; a method's own ``setup`` calls this first."""
        generator = self.generator
        generator.supports.require(method=self.name, generator=generator.name, **self.needs)
        if not generator.supports.raw_completion:
            raise GeneratorCapabilityError(
                f"{self.name} continues a plain-text prompt token by token, which generator {generator.name!r} "
                "is configured not to do; set generator.openai.completions_for_text=true (vLLM and llama.cpp "
                "serve /v1/completions) or use a local model"
            )
        cfg = self.cfg
        self.exemplars = take(exemplar_set(cfg.exemplars, self.shared.dataset), cfg.num_exemplars)
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

    def until_answer(self, g: Generation) -> list[str]:
        """``g``'s pieces through the end of the sentence that states the answer (all of them when
        none does)."""
        pieces, n, _, _ = self.whole_step(g)
        return pieces[:n]

    def whole_step(self, g: Generation) -> Kept:
        """As :meth:`first_sentence`, for a step that keeps all it wrote: ``g``'s pieces, how many to
        keep (all, or through the sentence that states the answer), whether that completes the
        answer, and whether the model stopped."""
        pieces = self.usable(g)
        stopped = g.finish_reason == "stop"
        n, answered = self.through_answer(pieces, stopped)
        return pieces, n, answered, stopped

    def first_sentence(self, g: Generation) -> Kept:
        """``g``'s pieces, how many of them to keep (through the first sentence, and at most through
        the sentence that states the answer), whether that completes the answer, and whether the
        model stopped right after the first sentence."""
        pieces = self.usable(g)
        end = first_sentence_end(g.text)
        n = len(pieces) if end is None else tokens_through(pieces, end)
        stopped = g.finish_reason == "stop" and n == len(pieces)
        n, answered = self.through_answer(pieces[:n], stopped)
        return pieces, n, answered, stopped

    def answer_at_once(self, s: Session, docs: Sequence[Chunk], **log: Any) -> Program:
        """The whole answer in one generation with ``docs`` in the prompt (kept through the answer
        sentence), logged with ``log`` and the text (wo-RAG, SR-RAG)."""
        g = yield self.generate(s, docs, self.remaining_for(s))
        text = s.accept(self.until_answer(g))
        s.log(**log, text=text)

    def retrieve_every_step(
        self, s: Session, kind: str, step_tokens: int, keep: Callable[[Generation], Kept]
    ) -> Program:
        """DRAGIN's fixed-interval retrieval (FL-RAG, FS-RAG): before every step, retrieve with the
        text the previous step kept (the question for the first), replacing the documents; generate
        at most ``step_tokens`` and keep what ``keep`` says (:meth:`whole_step` or
        :meth:`first_sentence`). Each step is logged as ``kind``; the loop ends when the answer
        sentence is complete, the model stops, nothing is kept, or the generation length is used up."""
        query = s.question
        while self.remaining_for(s) > 0:
            hits = yield self.retrieve(query)
            docs = s.hold(hits[0])
            g = yield self.generate(s, docs, min(step_tokens, self.remaining_for(s)))
            pieces, n, answered, stopped = keep(g)
            text = s.accept(pieces[:n])
            s.log(kind=kind, query=query, doc_ids=[d.id for d in docs], text=text)
            if answered or stopped or n == 0:
                return
            query = self.trim_query(text.strip()) or s.question

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
