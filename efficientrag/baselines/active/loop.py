"""The generate-retrieve-continue machinery every active method runs on.

Each method writes its per-question logic as a *program*: a Python generator that yields requests
(:class:`Generate`, :class:`Retrieve`, :class:`Attend`, or a list of them) and receives their
results. :func:`drive` runs the programs of a whole batch of questions in lockstep: in each round
it gathers the pending requests of every question, sends compatible ones to the generator or the
retriever as one batched call, and hands each question its own result. So the per-question logic
reads like the papers' pseudo-code, while a GPU still sees batches.

Costs are booked per question, exactly, on its :class:`Session`: every request belongs to one
question and every :class:`~efficientrag.llm.generator.Generation` carries its own token counts.
Wall time of a batched call is shared equally among the requests in it.

Budgets: questions of a batch usually have different numbers of tokens left. A local model returns
every generated token, and greedy decoding of ``n`` tokens is the first ``n`` tokens of a longer
greedy run, so with ``merge_budgets`` one call generates to the largest budget and each result is
cut back to its own (the cut result is what a call with that budget returns; its
``completion_tokens`` counts only the kept tokens). API generators are not merged: a longer
request would be billed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from collections.abc import Generator as PyGenerator
from dataclasses import dataclass
from typing import Any

from efficientrag.baselines.base import Counters, Prediction
from efficientrag.data.schema import Chunk, Example
from efficientrag.errors import InvalidArgumentError, OperationError, WrongTypeError
from efficientrag.llm.answers import extract_answer_detailed
from efficientrag.llm.generator import AttentionView, Generation, Generator
from efficientrag.retrieval.base import Hit, Retriever


@dataclass(frozen=True)
class Generate:
    prompt: str
    max_new_tokens: int
    stop: tuple[str, ...] = ()
    token_probs: bool = False
    entropies: bool = False
    attention: bool = False
    # (token id, bias) pairs added to the logits (FLARE-instruct).
    logit_bias: tuple[tuple[int, float], ...] = ()
    # What the call is for; counted as "<kind>_calls" (answer, lookahead, regenerate, question, ...).
    kind: str = "answer"


@dataclass(frozen=True)
class Retrieve:
    queries: tuple[str, ...]
    k: int


@dataclass(frozen=True)
class Attend:
    """Last-layer attention over ``text`` with no generation (local models only)."""

    text: str
    per_head: bool = False


Request = Generate | Retrieve | Attend
Program = PyGenerator[Any, Any, None]


class Session:
    """One question's state: the answer written so far, the documents held, everything retrieved,
    the step trace and the cost counters."""

    def __init__(self, example: Example) -> None:
        self.example = example
        self.question = example.question
        self.answer = ""
        self.answer_tokens = 0
        self.docs: list[Chunk] = []
        self.retrieved: dict[str, Chunk] = {}
        self.steps: list[dict[str, Any]] = []
        self.counters = Counters()
        self.final_text: str | None = None

    def accept(self, pieces: Sequence[str]) -> str:
        """Append generated tokens to the answer."""
        text = "".join(pieces)
        self.answer += text
        self.answer_tokens += len(pieces)
        return text

    def accept_text(self, text: str, n_tokens: int) -> str:
        """Append text that is not a whole number of tokens (FLARE-instruct cuts out its queries)."""
        self.answer += text
        self.answer_tokens += n_tokens
        return text

    def hold(self, hits: Sequence[Hit]) -> list[Chunk]:
        """The documents of a retrieval become the current ones (replacing the previous ones) and
        join the set of retrieved chunks the question is scored on."""
        self.docs = [h.chunk for h in hits]
        for chunk in self.docs:
            self.retrieved.setdefault(chunk.id, chunk)
        return self.docs

    def log(self, **info: Any) -> None:
        self.steps.append({"step": len(self.steps), **info})

    def prediction(self) -> Prediction:
        text = self.final_text if self.final_text is not None else self.answer
        found = extract_answer_detailed(text, "so_the_answer_is")
        self.counters["answer_tokens"] = self.answer_tokens
        self.counters["retrieved_chunks"] = len(self.retrieved)
        trace = {"steps": self.steps, "answer_source": found.source, "followed_format": found.followed_format}
        return Prediction(
            example_id=self.example.id,
            chunks=list(self.retrieved.values()),
            answer=found.answer,
            ranked=False,
            trace=trace,
            counters=self.counters,
            raw_output=text,
        )


def drive(
    programs: Sequence[Program],
    sessions: Sequence[Session],
    generator: Generator,
    retriever: Retriever | None,
    *,
    merge_budgets: bool = False,
) -> None:
    """Run every program to its end (see the module docstring)."""
    if len(programs) != len(sessions):
        raise InvalidArgumentError(f"{len(programs)} programs for {len(sessions)} sessions")
    pending: dict[int, tuple[list[Request], bool]] = {}

    def advance(i: int, value: Any) -> None:
        try:
            req = programs[i].send(value)
        except StopIteration:
            return
        many = isinstance(req, (list, tuple))
        reqs = list(req) if many else [req]
        for r in reqs:
            if not isinstance(r, (Generate, Retrieve, Attend)):
                raise WrongTypeError(f"a program yielded {r!r}; expected Generate, Retrieve or Attend")
        pending[i] = (reqs, many)

    for i in range(len(programs)):
        advance(i, None)
    while pending:
        current, pending = pending, {}
        results: dict[tuple[int, int], Any] = {}
        items = [(i, j, r) for i, (reqs, _) in current.items() for j, r in enumerate(reqs)]
        _run_generates(
            [x for x in items if isinstance(x[2], Generate)], sessions, generator, merge_budgets, results
        )
        _run_retrieves([x for x in items if isinstance(x[2], Retrieve)], sessions, retriever, results)
        _run_attends([x for x in items if isinstance(x[2], Attend)], sessions, generator, results)
        for i, (reqs, many) in current.items():
            out = [results[(i, j)] for j in range(len(reqs))]
            advance(i, out if many else out[0])


Item = tuple[int, int, Any]


def _groups(items: Sequence[Item], key: Callable[[Any], Any]) -> dict[Any, list[Item]]:
    groups: dict[Any, list[Item]] = {}
    for item in items:
        groups.setdefault(key(item[2]), []).append(item)
    return groups


def _run_generates(
    items: Sequence[Item],
    sessions: Sequence[Session],
    generator: Generator,
    merge_budgets: bool,
    results: dict[tuple[int, int], Any],
) -> None:
    def key(r: Generate) -> tuple:
        shape = (r.stop, r.token_probs, r.entropies, r.attention, r.logit_bias)
        return shape if merge_budgets else (*shape, r.max_new_tokens)

    for group in _groups(items, key).values():
        first: Generate = group[0][2]
        budget = max(r.max_new_tokens for _, _, r in group)
        extra = {"logit_bias": dict(first.logit_bias)} if first.logit_bias else {}
        start = time.perf_counter()
        gens = generator.generate(
            [r.prompt for _, _, r in group],
            max_new_tokens=budget,
            stop=list(first.stop) or None,
            temperature=0.0,
            want_token_probs=first.token_probs,
            want_entropies=first.entropies,
            want_attention=first.attention,
            **extra,
        )
        share = (time.perf_counter() - start) / len(group)
        if len(gens) != len(group):
            raise OperationError(
                f"generator {generator.name} returned {len(gens)} generations for {len(group)}"
            )
        for (i, j, r), g in zip(group, gens, strict=True):
            g = clip_generation(g, r.max_new_tokens)
            c = sessions[i].counters
            c.add("llm_calls")
            c.add(f"{r.kind}_calls")
            c.add("prompt_tokens", g.prompt_tokens)
            c.add("completion_tokens", g.completion_tokens)
            c.add("forward_passes", g.completion_tokens)
            if g.attention is not None:
                c.add("attention_passes")
                c.add("attention_tokens", len(g.attention))
                c.add("forward_passes")
            c.add("time_generate_s", share)
            results[(i, j)] = g


def _run_retrieves(
    items: Sequence[Item],
    sessions: Sequence[Session],
    retriever: Retriever | None,
    results: dict[tuple[int, int], Any],
) -> None:
    if items and retriever is None:
        raise OperationError("a method asked for retrieval but was built without a retriever")
    for k, group in _groups(items, lambda r: r.k).items():
        queries = [q for _, _, r in group for q in r.queries]
        start = time.perf_counter()
        hits = retriever.search(queries, k) if queries else []  # type: ignore[union-attr]
        share = (time.perf_counter() - start) / max(1, len(queries))
        pos = 0
        for i, j, r in group:
            n = len(r.queries)
            results[(i, j)] = hits[pos : pos + n]
            pos += n
            c = sessions[i].counters
            c.add("retrieval_steps")
            c.add("retrieval_calls", n)
            c.add("time_retrieval_s", share * n)


def _run_attends(
    items: Sequence[Item],
    sessions: Sequence[Session],
    generator: Generator,
    results: dict[tuple[int, int], Any],
) -> None:
    attend = getattr(generator, "attend", None)
    if items and attend is None:
        raise OperationError(f"generator {generator.name} cannot compute attention over a given text")
    for per_head, group in _groups(items, lambda r: r.per_head).items():
        start = time.perf_counter()
        views: list[AttentionView] = attend([r.text for _, _, r in group], per_head=per_head)  # type: ignore[misc]
        share = (time.perf_counter() - start) / len(group)
        for (i, j, _), view in zip(group, views, strict=True):
            c = sessions[i].counters
            c.add("attention_passes")
            c.add("attention_tokens", len(view))
            c.add("forward_passes")
            c.add("time_attend_s", share)
            results[(i, j)] = view


def clip_generation(g: Generation, n: int) -> Generation:
    """``g`` as a call with ``max_new_tokens=n`` would have returned it (greedy decoding)."""
    if g.tokens is None or len(g.tokens) <= n:
        return g
    tokens = g.tokens[:n]
    text = "".join(tokens)
    view = g.attention
    if view is not None:
        keep = view.prompt_length + n
        cut = len(view.text) - len(g.text) + len(text)
        view = AttentionView(
            weights=view.weights[:keep, :keep],
            token_ids=view.token_ids[:keep],
            tokens=view.tokens[:keep],
            offsets=view.offsets[:keep],
            text=view.text[:cut],
            prompt_length=view.prompt_length,
            per_head=view.per_head[:, :keep, :keep] if view.per_head is not None else None,
        )
    return Generation(
        text=text,
        finish_reason="length",
        prompt_tokens=g.prompt_tokens,
        completion_tokens=n,
        tokens=tokens,
        token_ids=g.token_ids[:n] if g.token_ids is not None else None,
        token_probs=g.token_probs[:n] if g.token_probs is not None else None,
        entropies=g.entropies[:n] if g.entropies is not None else None,
        attention=view,
    )
