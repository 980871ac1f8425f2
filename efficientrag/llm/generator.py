"""One interface for answer generation, whatever produces the text.

Every method (the EfficientRAG answer step, the paper baselines, FLARE, DRAGIN) asks a
:class:`Generator` for continuations. Two backends implement it: a local ``transformers`` causal LM
(:mod:`efficientrag.llm.hf_generator`), the only one that can give entropies and attention, and
any OpenAI-compatible endpoint (:mod:`efficientrag.llm.openai_generator`). A method checks
``generator.supports`` before it starts, so a missing capability fails before any work is done.

A prompt is either a plain string, continued as raw text (what FLARE and DRAGIN extend token by
token, and what a partial answer is appended to), or a list of chat messages
``[{"role": ..., "content": ...}]``. Generation is batched: one call takes many prompts.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from efficientrag.errors import EfficientRAGError, InvalidArgumentError, MissingKeyError, WrongTypeError

Message = Mapping[str, str]
Prompt = str | Sequence[Message]
FinishReason = Literal["stop", "length"]


class GeneratorCapabilityError(EfficientRAGError, RuntimeError):
    """The generator cannot provide what a method asked for (attention from an API, logprobs from
    a server that drops them, ...). The message names the method and what to use instead."""


@dataclass(frozen=True)
class GeneratorSupport:
    """What a generator can return besides text."""

    token_probs: bool
    entropies: bool
    attention: bool
    chat: bool
    raw_completion: bool

    def require(
        self,
        *,
        method: str,
        generator: str,
        token_probs: bool = False,
        entropies: bool = False,
        attention: bool = False,
    ) -> None:
        """Raise :class:`GeneratorCapabilityError` naming ``method`` if a needed capability is missing."""
        missing = [
            name
            for name, wanted, have in (
                ("per-token probabilities", token_probs, self.token_probs),
                ("per-token entropies", entropies, self.entropies),
                ("attention weights", attention, self.attention),
            )
            if wanted and not have
        ]
        if missing:
            raise GeneratorCapabilityError(
                f"{method} needs {' and '.join(missing)}, which generator {generator!r} cannot provide; "
                "use a local Hugging Face model (generator.backend=hf, generator.model=<path or hub name>)"
            )


@dataclass
class AttentionView:
    """Last-layer self-attention over one whole sequence (prompt followed by generated tokens).

    ``weights[q, k]`` is how much query position ``q`` attends to key position ``k``: row = query,
    column = key. Causal, so the upper triangle is 0 and every row sums to 1. Heads are averaged;
    ``per_head`` (``[heads, seq, seq]``) is kept only when asked for.

    ``tokens[i]`` is the text of position ``i`` and ``offsets[i]`` its ``(start, end)`` character
    span in ``text``, which is the rendered prompt (after any chat template) followed by the
    generated text. Special tokens the tokenizer added (BOS) have an empty span. Positions
    ``< prompt_length`` belong to the prompt; the rest were generated.
    """

    weights: np.ndarray
    token_ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    text: str
    prompt_length: int
    per_head: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.token_ids)
        if self.weights.shape != (n, n):
            raise InvalidArgumentError(
                f"attention weights have shape {self.weights.shape}, expected ({n}, {n})"
            )
        if len(self.tokens) != n or len(self.offsets) != n:
            raise InvalidArgumentError("tokens, offsets and token_ids must have one entry per position")
        if not 0 <= self.prompt_length <= n:
            raise InvalidArgumentError(f"prompt_length {self.prompt_length} outside [0, {n}]")

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def generated_positions(self) -> range:
        return range(self.prompt_length, len(self.token_ids))

    @property
    def prompt_text_length(self) -> int:
        """Characters of ``text`` that belong to the prompt."""
        ends = [end for _, end in self.offsets[: self.prompt_length]]
        return max(ends, default=0)

    def position_at_char(self, char: int) -> int | None:
        """The position whose span contains character ``char`` of ``text`` (None for none)."""
        for i, (start, end) in enumerate(self.offsets):
            if start <= char < end:
                return i
        return None


@dataclass
class Generation:
    """One continuation of one prompt.

    ``tokens`` are the generated tokens as text pieces that concatenate to ``text`` (after a stop
    sequence the last kept piece is clipped at the cut). ``token_probs[i]`` is the model's
    probability of ``tokens[i]`` and ``entropies[i]`` the natural-log entropy of the full
    next-token distribution at that step, both from the raw logits (before temperature or any
    other warping). They are None unless asked for. ``prompt_tokens`` / ``completion_tokens``
    count what the model actually processed and produced, including an end-of-sequence token or
    the tokens of a stop sequence that are not part of ``text``.
    """

    text: str
    finish_reason: FinishReason
    prompt_tokens: int
    completion_tokens: int
    tokens: list[str] | None = None
    token_ids: list[int] | None = None
    token_probs: list[float] | None = None
    entropies: list[float] | None = None
    attention: AttentionView | None = None


class GeneratorCounters:
    """Running totals of one generator, shared by every method that uses it (thread-safe).

    Methods take :meth:`snapshot` before an example and :meth:`since` after it to get that
    example's cost. Keys: ``calls`` (generate calls), ``prompts`` (prompts generated for),
    ``prompt_tokens``, ``completion_tokens``, ``forward_passes`` (model invocations: prefill and
    decode steps for a local model; requests for an API), ``attention_passes`` (extra forward
    passes run only to read attention) and ``attention_tokens`` (tokens those passes covered).
    """

    KEYS = (
        "calls",
        "prompts",
        "prompt_tokens",
        "completion_tokens",
        "forward_passes",
        "attention_passes",
        "attention_tokens",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, int] = dict.fromkeys(self.KEYS, 0)

    def add(self, **amounts: int) -> None:
        unknown = set(amounts) - set(self.KEYS)
        if unknown:
            raise MissingKeyError(f"unknown counter(s) {sorted(unknown)}; known: {list(self.KEYS)}")
        with self._lock:
            for key, value in amounts.items():
                self._values[key] += int(value)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._values)

    def since(self, before: Mapping[str, int]) -> dict[str, int]:
        """What was counted after ``before`` (a :meth:`snapshot`)."""
        now = self.snapshot()
        return {key: now[key] - int(before.get(key, 0)) for key in self.KEYS}

    def reset(self) -> None:
        with self._lock:
            self._values = dict.fromkeys(self.KEYS, 0)

    def __getitem__(self, key: str) -> int:
        with self._lock:
            return self._values[key]

    def __repr__(self) -> str:
        return f"GeneratorCounters({self.snapshot()})"


@runtime_checkable
class Generator(Protocol):
    name: str
    supports: GeneratorSupport
    counters: GeneratorCounters

    def generate(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int,
        stop: Sequence[str] | None = None,
        temperature: float = 0.0,
        want_token_probs: bool = False,
        want_entropies: bool = False,
        want_attention: bool = False,
    ) -> list[Generation]:
        """One :class:`Generation` per prompt, in order. ``temperature=0`` is greedy decoding."""
        ...


@dataclass(frozen=True)
class GenerationRequest:
    """One :meth:`Generator.generate` call with its arguments checked, as a backend derived from
    :class:`GeneratorBase` receives it."""

    prompts: list[Prompt]
    max_new_tokens: int
    stops: list[str]
    temperature: float
    want_token_probs: bool
    want_entropies: bool
    want_attention: bool
    per_head_attention: bool
    # The backend's own form of ``logit_bias`` (see its ``_check_logit_bias``); None for no bias.
    logit_bias: Any


class GeneratorBase(ABC):
    """What the backends share: :meth:`generate`, the :class:`Generator` call, checks its arguments
    once for all of them and hands a :class:`GenerationRequest` to the backend's :meth:`_generate`.

    A backend sets ``name``, ``supports`` and ``counters`` and implements :meth:`_generate` and
    :meth:`_check_logit_bias`."""

    name: str
    supports: GeneratorSupport
    counters: GeneratorCounters

    def generate(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int,
        stop: Sequence[str] | None = None,
        temperature: float = 0.0,
        want_token_probs: bool = False,
        want_entropies: bool = False,
        want_attention: bool = False,
        per_head_attention: bool = False,
        logit_bias: Mapping[int, float] | None = None,
    ) -> list[Generation]:
        """Continue every prompt (see :meth:`Generator.generate`).

        ``per_head_attention`` additionally keeps each head's weights on the attention view.
        ``logit_bias`` maps token ids to values added to their logits at every step (FLARE-instruct
        pushes or bans "["): it steers which tokens are chosen; which ids and values a backend
        accepts is its own (:meth:`_check_logit_bias`).
        """
        stops = check_generation_args(max_new_tokens, stop, temperature)
        checked = check_prompts(prompts)
        bias = self._check_logit_bias(logit_bias)
        request = GenerationRequest(
            checked,
            max_new_tokens,
            stops,
            temperature,
            want_token_probs,
            want_entropies,
            want_attention,
            per_head_attention,
            bias,
        )
        return self._generate(request)

    @abstractmethod
    def _check_logit_bias(self, logit_bias: Mapping[int, float] | None) -> Any:
        """``logit_bias`` in the form the backend sends on (None when empty); raises ValueError for
        an id or value it cannot take."""

    @abstractmethod
    def _generate(self, request: GenerationRequest) -> list[Generation]:
        """One :class:`Generation` per prompt of ``request``, in order."""


# -- shared argument checks and text helpers --------------------------------------------------------


def is_chat_prompt(prompt: Any) -> bool:
    return not isinstance(prompt, str)


def check_prompts(prompts: Sequence[Prompt]) -> list[Prompt]:
    """Validate prompt shapes early, naming the offending index."""
    if isinstance(prompts, str) or not isinstance(prompts, Sequence):
        raise WrongTypeError(
            "prompts must be a list of prompts (strings or message lists), not a single prompt"
        )
    out: list[Prompt] = []
    for i, prompt in enumerate(prompts):
        if isinstance(prompt, str):
            out.append(prompt)
            continue
        if not isinstance(prompt, Sequence) or not prompt:
            raise WrongTypeError(
                f"prompts[{i}] must be a string or a non-empty list of chat messages, got {prompt!r:.80}"
            )
        for j, msg in enumerate(prompt):
            if not isinstance(msg, Mapping) or not isinstance(msg.get("role"), str) or "content" not in msg:
                raise WrongTypeError(
                    f"prompts[{i}][{j}] must be a dict with 'role' and 'content', got {msg!r:.80}"
                )
            if not isinstance(msg["content"], str):
                raise WrongTypeError(f"prompts[{i}][{j}]['content'] must be a string")
        out.append([dict(m) for m in prompt])
    return out


def check_generation_args(max_new_tokens: int, stop: Sequence[str] | None, temperature: float) -> list[str]:
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise InvalidArgumentError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if temperature < 0:
        raise InvalidArgumentError(f"temperature must be >= 0, got {temperature}")
    if stop is None:
        return []
    if isinstance(stop, str):
        stop = [stop]
    stops = list(stop)
    if any(not isinstance(s, str) or not s for s in stops):
        raise InvalidArgumentError(f"stop sequences must be non-empty strings, got {stops!r}")
    return stops


def first_stop(text: str, stops: Sequence[str]) -> int | None:
    """Index in ``text`` where the earliest stop sequence begins, or None."""
    hits = [i for i in (text.find(s) for s in stops) if i >= 0]
    return min(hits) if hits else None


def clip_pieces(pieces: Sequence[str], cut: int) -> list[str]:
    """The pieces covering ``"".join(pieces)[:cut]``, the last one clipped at the cut."""
    kept: list[str] = []
    pos = 0
    for piece in pieces:
        if pos >= cut:
            break
        kept.append(piece[: cut - pos])
        pos += len(piece)
    return kept


def entropy_from_logprobs(logprobs: Sequence[float]) -> float:
    """Natural-log entropy of a (possibly truncated) distribution given as log-probabilities."""
    values = np.asarray([lp for lp in logprobs if np.isfinite(lp)], dtype=np.float64)
    if values.size == 0:
        return float("nan")
    probs = np.exp(values)
    return float(-(probs * values).sum())
