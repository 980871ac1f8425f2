"""Exact per-question cost of a batch that is processed in lockstep.

Methods batch their LLM prompts and retrieval queries across questions (an API generator runs a
batch concurrently, a local model pads it into one forward pass), so the generator's running
totals cannot tell which question spent what. The ledger can: every prompt and query is sent
with the index of the question it belongs to, and each :class:`Generation` carries its own token
counts. LLM calls, tokens and retrieval calls are therefore exact per question; wall time is
shared among the questions of a batched call in proportion to their prompts (queries).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence

from efficientrag.baselines.base import Counters
from efficientrag.errors import InvalidArgumentError, OperationError
from efficientrag.llm.generator import Generation, Generator, Prompt
from efficientrag.retrieval.base import Hit, Retriever


class CostLedger:
    def __init__(self, num_questions: int) -> None:
        self.counters = [Counters() for _ in range(num_questions)]

    def add(self, owner: int, key: str, value: float = 1) -> None:
        self.counters[owner].add(key, value)

    def generate(
        self,
        generator: Generator,
        owners: Sequence[int],
        prompts: Sequence[Prompt],
        *,
        stage: str,
        max_new_tokens: int,
        stop: Sequence[str] | None = None,
        temperature: float = 0.0,
    ) -> list[Generation]:
        """One batched generate call; ``owners[i]`` is the question ``prompts[i]`` belongs to."""
        if len(owners) != len(prompts):
            raise InvalidArgumentError(f"{len(owners)} owners for {len(prompts)} prompts")
        if not prompts:
            return []
        start = time.perf_counter()
        gens = generator.generate(
            list(prompts), max_new_tokens=max_new_tokens, stop=stop, temperature=temperature
        )
        elapsed = time.perf_counter() - start
        if len(gens) != len(prompts):
            raise OperationError(
                f"generator {generator.name} returned {len(gens)} generations for {len(prompts)} prompts"
            )
        gens = [_with_prefill(p, g) for p, g in zip(prompts, gens, strict=True)]
        for owner, gen in zip(owners, gens, strict=True):
            c = self.counters[owner]
            c.add("llm_calls")
            c.add("prompt_tokens", gen.prompt_tokens)
            c.add("completion_tokens", gen.completion_tokens)
            if gen.finish_reason == "length":
                c.add("truncated_generations")
        self._share_time(owners, f"time_{stage}_s", elapsed)
        return gens

    def search(
        self, retriever: Retriever, owners: Sequence[int], queries: Sequence[str], k: int
    ) -> list[list[Hit]]:
        """One batched search; every query is one retrieval call of its question."""
        if len(owners) != len(queries):
            raise InvalidArgumentError(f"{len(owners)} owners for {len(queries)} queries")
        if not queries:
            return []
        start = time.perf_counter()
        hits = retriever.search(list(queries), k)
        elapsed = time.perf_counter() - start
        for owner in owners:
            self.counters[owner].add("retrieval_calls")
        self._share_time(owners, "time_retrieval_s", elapsed)
        return hits

    def _share_time(self, owners: Sequence[int], key: str, elapsed: float) -> None:
        per_item = elapsed / len(owners)
        for owner in owners:
            self.counters[owner].add(key, per_item)


# Parts of time_retrieval_s that EfficientRAG's trace also reports on their own (the backend's query
# encoding and index search, ``Retriever.last_timings``): counted once, inside retrieval.
RETRIEVAL_PARTS = ("time_encode_s", "time_search_s")


def latency_s(counters: Mapping[str, float]) -> float:
    """Seconds a question cost: the sum of its ``time_<stage>_s`` counters, each stage once (the
    encode/search split of a retrieval that is timed whole is not added to it again).

    Args:
        counters: A question's counters, or a run's ``counters_mean``.

    Returns:
        The seconds.
    """
    parts = RETRIEVAL_PARTS if "time_retrieval_s" in counters else ()
    return sum(
        float(v) for k, v in counters.items() if k.startswith("time_") and k.endswith("_s") and k not in parts
    )


def _with_prefill(prompt: Prompt, gen: Generation) -> Generation:
    """The reply as the model wrote it: a chat prompt ending with an assistant message is continued
    (prompts.prefill), so that message's content is the start of the reply."""
    if isinstance(prompt, list) and prompt and prompt[-1].get("role") == "assistant":
        prefix = str(prompt[-1].get("content") or "")
        if prefix:
            return dataclasses.replace(gen, text=prefix + gen.text)
    return gen
