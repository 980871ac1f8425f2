"""Token, call and cost accounting per pipeline stage.

Synthesis runs tens of thousands of calls; the numbers here feed progress-bar postfixes
(:meth:`UsageTracker.snapshot`) and the final report (:meth:`UsageTracker.summary`). Tokens are
split into billed ones (answered over HTTP, priced) and cached ones (served from the on-disk cache,
free), so a re-run shows what it saved.

A lock guards every update: the tracker may be shared by async tasks and by threads.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from efficientrag.atomic import write_text_atomic
from efficientrag.errors import InvalidArgumentError
from efficientrag.llm.config import ModelPrice
from efficientrag.llm.response import TokenUsage

log = logging.getLogger(__name__)


@dataclass
class StageUsage:
    """Calls, tokens and cost of one pipeline stage (or of several, added up).

    Attributes:
        calls: Calls that returned a response, cached ones included.
        cached: Of those, served from the cache with no HTTP request.
        failed: Calls that ended in an exception (after retries, if any).
        retries: Extra attempts made after a transient failure.
        errors: Failed attempts by kind (``rate_limit``, ``server_error``, ``timeout``, ...).
        prompt_tokens: Billed prompt tokens.
        completion_tokens: Billed completion tokens.
        cached_prompt_tokens: Prompt tokens of cache hits (free).
        cached_completion_tokens: Completion tokens of cache hits (free).
        cost_usd: Cost of the billed tokens, in USD.
        unpriced_models: Models with billed tokens but no price (counted as costing 0).
    """

    # Calls that returned a response, cached ones included.
    calls: int = 0
    # Of those, served from the cache with no HTTP request.
    cached: int = 0
    # Calls that ended in an exception (after retries, if any).
    failed: int = 0
    # Extra attempts made after a transient failure.
    retries: int = 0
    # Failed attempts by kind: rate_limit, server_error, timeout, connection, malformed, truncated, ...
    errors: Counter = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    cost_usd: float = 0.0
    # Models that had billed tokens but no entry in ``prices`` (their cost counted as 0).
    unpriced_models: set[str] = field(default_factory=set)

    def add(self, other: StageUsage) -> None:
        """Add another stage's counters into this one (in place).

        Args:
            other: The counters to add.
        """
        self.calls += other.calls
        self.cached += other.cached
        self.failed += other.failed
        self.retries += other.retries
        self.errors.update(other.errors)
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_prompt_tokens += other.cached_prompt_tokens
        self.cached_completion_tokens += other.cached_completion_tokens
        self.cost_usd += other.cost_usd
        self.unpriced_models |= other.unpriced_models

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageUsage:
        """Read back what :meth:`as_dict` wrote (missing counters are 0).

        Args:
            data: The counters as plain data.

        Returns:
            The counters.
        """
        return cls(
            calls=int(data.get("calls", 0)),
            cached=int(data.get("cached", 0)),
            failed=int(data.get("failed", 0)),
            retries=int(data.get("retries", 0)),
            errors=Counter({str(k): int(v) for k, v in (data.get("errors") or {}).items()}),
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            cached_prompt_tokens=int(data.get("cached_prompt_tokens", 0)),
            cached_completion_tokens=int(data.get("cached_completion_tokens", 0)),
            cost_usd=float(data.get("cost_usd", 0.0)),
            unpriced_models=set(data.get("unpriced_models") or ()),
        )

    def as_dict(self) -> dict[str, Any]:
        """The counters as plain data, for reports and usage files.

        Returns:
            Every field; ``errors`` as a sorted dict, ``unpriced_models`` as a sorted list.
        """
        return {
            "calls": self.calls,
            "cached": self.cached,
            "failed": self.failed,
            "retries": self.retries,
            "errors": dict(sorted(self.errors.items())),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "cached_completion_tokens": self.cached_completion_tokens,
            "cost_usd": self.cost_usd,
            "unpriced_models": sorted(self.unpriced_models),
        }


class UsageTracker:
    """Counts calls, tokens and cost per stage, safely shared by async tasks and threads.

    Args:
        prices: Model name -> price, for the cost (None: nothing priced).
    """

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self.prices = dict(prices or {})
        self._stages: dict[str, StageUsage] = {}
        self._lock = threading.Lock()

    def _stage(self, stage: str) -> StageUsage:
        st = self._stages.get(stage)
        if st is None:
            st = self._stages[stage] = StageUsage()
        return st

    def record_response(self, stage: str, model: str, usage: TokenUsage, *, cached: bool) -> None:
        """A call that returned a response (billed over HTTP, or free from the cache).

        Args:
            stage: The stage to count it under.
            model: The model, for its price.
            usage: The tokens it used.
            cached: Whether it came from the cache (its tokens then cost nothing).
        """
        with self._lock:
            st = self._stage(stage)
            st.calls += 1
            if cached:
                st.cached += 1
                st.cached_prompt_tokens += usage.prompt_tokens
                st.cached_completion_tokens += usage.completion_tokens
            else:
                self._bill(st, model, usage)

    def record_billed_failure(self, stage: str, model: str, usage: TokenUsage, kind: str) -> None:
        """A reply that was paid for but rejected (a truncated one): tokens count, the call failed.

        Args:
            stage: The stage to count it under.
            model: The model, for its price.
            usage: The tokens it used.
            kind: Why it was rejected (``"truncated"``).
        """
        with self._lock:
            st = self._stage(stage)
            self._bill(st, model, usage)
            st.errors[kind] += 1
            st.failed += 1

    def record_error(self, stage: str, kind: str) -> None:
        """One failed attempt (it may still be retried).

        Args:
            stage: The stage to count it under.
            kind: The failure's kind (``rate_limit``, ``timeout`` ...).
        """
        with self._lock:
            self._stage(stage).errors[kind] += 1

    def record_retry(self, stage: str) -> None:
        """One extra attempt after a transient failure.

        Args:
            stage: The stage to count it under.
        """
        with self._lock:
            self._stage(stage).retries += 1

    def record_failure(self, stage: str) -> None:
        """A call that raised to its caller.

        Args:
            stage: The stage to count it under.
        """
        with self._lock:
            self._stage(stage).failed += 1

    def _bill(self, st: StageUsage, model: str, usage: TokenUsage) -> None:
        st.prompt_tokens += usage.prompt_tokens
        st.completion_tokens += usage.completion_tokens
        price = self.prices.get(model)
        if price is None:
            if usage.total_tokens:
                st.unpriced_models.add(model)
        else:
            st.cost_usd += price.cost(usage.prompt_tokens, usage.completion_tokens)

    def stage(self, stage: str) -> StageUsage:
        """A copy of one stage's counters (zeros for a stage never seen).

        Args:
            stage: The stage's name.

        Returns:
            The counters, detached from the tracker.
        """
        with self._lock:
            out = StageUsage()
            if stage in self._stages:
                out.add(self._stages[stage])
            return out

    def total(self) -> StageUsage:
        """Every stage's counters added up.

        Returns:
            The sums, detached from the tracker.
        """
        with self._lock:
            out = StageUsage()
            for st in self._stages.values():
                out.add(st)
            return out

    def snapshot(self, stage: str | None = None) -> dict[str, Any]:
        """Compact counters for a tqdm postfix (one stage, or all together).

        Args:
            stage: The stage (None: all stages together).

        Returns:
            ``calls``, ``cached``, ``retries``, ``failed``, ``tok`` (billed tokens) and ``usd``.
        """
        st = self.total() if stage is None else self.stage(stage)
        return {
            "calls": st.calls,
            "cached": st.cached,
            "retries": st.retries,
            "failed": st.failed,
            "tok": st.prompt_tokens + st.completion_tokens,
            "usd": round(st.cost_usd, 4),
        }

    def summary(self) -> dict[str, Any]:
        """Per-stage and total counters as plain data, for reports and JSON files.

        Returns:
            ``{"stages": {name: counters}, "total": counters}``.
        """
        with self._lock:
            stages = {name: st.as_dict() for name, st in sorted(self._stages.items())}
        return {"stages": stages, "total": self.total().as_dict()}


def add_run_to_usage_file(path: str | os.PathLike[str], model: str, run: Mapping[str, Any]) -> dict[str, Any]:
    """Record one run's :meth:`UsageTracker.summary` in a usage file that covers every run in its
    folder, and return what was written.

    A resumable job is often run several times (a crash, a killed process, a bigger ``--limit``):
    each run only pays for what was still missing, so the file keeps every run under ``runs`` and
    its ``stages`` / ``total`` are the sums, which is what the output folder cost. A file written
    before runs were kept counts as one earlier run. One that does not parse is moved aside to
    ``<name>.unreadable`` with a warning (it may be the only record of what was spent): the run
    that just finished never fails on it."""
    path = os.fspath(path)
    runs: list[dict[str, Any]] = []
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                old = json.load(fh)
            if not isinstance(old, dict):
                raise InvalidArgumentError(f"expected a JSON object, got {type(old).__name__}")
            runs = list(old.get("runs") or [{k: old[k] for k in ("model", "stages", "total") if k in old}])
        except ValueError as exc:  # JSONDecodeError is a ValueError
            os.replace(path, path + ".unreadable")
            log.warning("%s: unreadable (%s); moved to %s.unreadable, starting a new record", path, exc, path)
    runs.append({"finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "model": model, **run})
    stages: dict[str, StageUsage] = {}
    for past in runs:
        for name, data in (past.get("stages") or {}).items():
            stages.setdefault(name, StageUsage()).add(StageUsage.from_dict(data))
    total = StageUsage()
    for st in stages.values():
        total.add(st)
    out = {
        "model": model,
        "stages": {name: st.as_dict() for name, st in sorted(stages.items())},
        "total": total.as_dict(),
        "runs": runs,
    }
    write_text_atomic(path, json.dumps(out, indent=2) + "\n")
    return out
