"""The LLM teacher (``teacher: llm``, the paper's path): an OpenAI-compatible model decomposes
questions, picks the chunk words that answer each sub-question, and writes next-hop queries.

One :class:`~efficientrag.llm.client.AsyncLLMClient` serves the whole run (bounded concurrency,
retries with backoff on 429/5xx/timeouts, the on-disk response cache that makes a resumed run
free for work already paid for); ``aclose()`` closes it and adds the run's usage to
``<out_dir>/llm_usage.json`` (every run's, summed). Prompts live in ``efficientrag.synth.prompts`` and replies are
parsed by ``efficientrag.synth.replies``; a reply that cannot be used becomes a
:class:`~efficientrag.synth.records.Reject` with a fixed reason. Transport failures that outlast
the retries propagate, so the stage records them as ``error: ...`` and ``retry_errors`` redoes
exactly those records once the endpoint is back.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk, Example
from efficientrag.errors import ConfigError
from efficientrag.llm.async_client import AsyncLLMClient
from efficientrag.llm.errors import LLMConfigError, TruncatedOutputError
from efficientrag.llm.usage import add_run_to_usage_file
from efficientrag.synth.prompts import PROMPT_VERSION, prompt_digest, prompt_set
from efficientrag.synth.prompts.inputs import decompose_input
from efficientrag.synth.prompts.render import decompose_messages, label_messages, next_hop_messages
from efficientrag.synth.records import R_COUNT, Decomposition, Reject, SubQuestion
from efficientrag.synth.replies import (
    R_TRUNCATED,
    parse_decomposition,
    parse_extracted_words,
    parse_filtered_query,
)
from efficientrag.synth.teacher.base import R_NOT_IN_CORPUS, DependencyInfo, Extraction
from efficientrag.synth.teacher.paragraphs import ChunkLookup
from efficientrag.text.words import join_words

if TYPE_CHECKING:
    from efficientrag.synth.config import LLMTeacherConfig, SynthConfig

log = logging.getLogger(__name__)

NAME = "llm"
USAGE_FILE = "llm_usage.json"


class LLMTeacher:
    name = NAME

    def __init__(
        self,
        client: AsyncLLMClient,
        corpus: Corpus,
        *,
        json_mode: bool = False,
        hints: bool = True,
        usage_path: str | Path | None = None,
    ) -> None:
        self.client = client
        self.corpus = corpus
        self.lookup = ChunkLookup(corpus)
        self.json_mode = json_mode
        self.hints = hints
        self.usage_path = Path(usage_path) if usage_path is not None else None

    # -- the three judgements -----------------------------------------------------------------

    async def decompose(self, example: Example) -> Decomposition:
        chunks = self._gold_chunks(example)
        inp = decompose_input(example, chunks, self.lookup, hints=self.hints)
        text = await self._ask(decompose_messages(prompt_set(example.dataset), inp), "decompose")
        subs = parse_decomposition(text, [(c.id, c.title) for c in chunks])
        return Decomposition(subs, inp.qtype)

    async def extract_words(self, example: Example, sub_question: SubQuestion, chunk: Chunk) -> Extraction:
        messages = label_messages(
            prompt_set(example.dataset), sub_question.sub_question, sub_question.answer, chunk.contents
        )
        words = parse_extracted_words(await self._ask(messages, "label"))
        return Extraction(words, None, NAME)

    async def next_hop_query(
        self,
        example: Example,
        sub_question: SubQuestion,
        prev_query_words: Sequence[str],
        dependencies: Sequence[DependencyInfo],
    ) -> str:
        answered = [
            (d.sub_question.sub_question, d.sub_question.answer, join_words(d.info_words))
            for d in dependencies
        ]
        messages = next_hop_messages(prompt_set(example.dataset), join_words(prev_query_words), answered)
        return parse_filtered_query(await self._ask(messages, "next_hop"))

    # -- bookkeeping ----------------------------------------------------------------------------

    def progress(self) -> Mapping[str, Any]:
        """LLM calls so far in this run (all stages): answered, from cache, retried, failed, cost."""
        snap = self.client.usage.snapshot()
        return {k: snap[k] for k in ("calls", "cached", "retries", "failed", "usd")}

    def params(self) -> Mapping[str, Any]:
        cfg = self.client.cfg
        return {
            "teacher": NAME,
            "model": cfg.model,
            "prompt_version": PROMPT_VERSION,
            "prompt_digest": prompt_digest(),
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "seed": cfg.seed,
            "extra_body": dict(cfg.extra_body),
            "json_mode": self.json_mode,
            "hints": self.hints,
        }

    async def aclose(self) -> None:
        summary = self.client.usage.summary()
        try:
            if self.usage_path is not None:
                self.usage_path.parent.mkdir(parents=True, exist_ok=True)
                add_run_to_usage_file(self.usage_path, self.client.cfg.model, summary)
            total = summary["total"]
            log.info(
                "LLM teacher: %d calls (%d cached, %d retries, %d failed), %d prompt + %d completion tokens, $%.4f",
                total["calls"],
                total["cached"],
                total["retries"],
                total["failed"],
                total["prompt_tokens"],
                total["completion_tokens"],
                total["cost_usd"],
            )
        finally:
            await self.client.aclose()

    # -- helpers --------------------------------------------------------------------------------

    def _gold_chunks(self, example: Example) -> list[Chunk]:
        ids = list(dict.fromkeys(example.gold_chunk_ids))
        if not ids:
            raise Reject(R_COUNT, "the question has no gold chunks")
        missing = [cid for cid in ids if cid not in self.corpus]
        if missing:
            raise Reject(R_NOT_IN_CORPUS, f"chunk(s) {missing}")
        return [self.corpus.get(cid) for cid in ids]

    async def _ask(self, messages: list[dict[str, str]], stage: str) -> str:
        extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if self.json_mode else {}
        try:
            response = await self.client.chat(messages, stage=stage, **extra)
        except TruncatedOutputError as exc:
            # At temperature 0 the same request stops at the same place: not worth a retry.
            raise Reject(R_TRUNCATED, f"{exc}; partial reply: {exc.response.text[:120]!r}") from None
        return response.text


def build_teacher(cfg: SynthConfig, corpus: Corpus) -> LLMTeacher:
    """Entry point used by :func:`efficientrag.synth.teacher.get_teacher`: one client for the run,
    with ``cfg.concurrency`` requests in flight (the stage runner's concurrency)."""
    llm = dataclasses.replace(cfg.llm, concurrency=cfg.concurrency)
    if not llm.model:
        raise ConfigError("'llm.model': empty; name the model the server serves (e.g. llm.model=gpt-4o-mini)")
    try:
        client = AsyncLLMClient(llm)
    except LLMConfigError as exc:
        raise ConfigError(f"'llm': {exc}") from None
    settings: LLMTeacherConfig = cfg.llm_teacher
    return LLMTeacher(
        client,
        corpus,
        json_mode=settings.json_mode,
        hints=settings.hints,
        usage_path=Path(cfg.out_dir) / USAGE_FILE,
    )
