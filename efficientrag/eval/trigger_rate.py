"""How often an active method decided to retrieve, read back from its step logs.

DRAGIN and FLARE both decide, step by step, whether to retrieve; the share of steps where they did
is what separates a calibrated trigger from one that always (or never) fires. The two methods log
the decision under different keys, so reading it is one function, used by every report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def retrieval_decision(step: Mapping[str, Any]) -> bool | None:
    """Whether the model's own signal asked for retrieval at this step; None for a step that
    decides nothing (initial retrieval, answer retries). DRAGIN logs ``triggered`` on every
    generation step, FLARE ``retrieved`` on every look-ahead."""
    if "triggered" in step:
        return bool(step["triggered"])
    if step.get("kind") == "lookahead" and "retrieved" in step:
        return bool(step["retrieved"])
    return None


def logged_steps(record: Mapping[str, Any]) -> list[Any]:
    trace = record.get("trace") or {}
    return list(trace.get("steps") or []) if isinstance(trace, Mapping) else []


def trigger_rates(records: Iterable[Mapping[str, Any]]) -> tuple[float | None, float | None]:
    """(share of decision steps that retrieved, share of questions where the model retrieved at
    least once), over the questions that logged any decision; (None, None) when none did."""
    steps = triggered = questions = hit = 0
    for rec in records:
        decided = [retrieval_decision(s) for s in logged_steps(rec) if isinstance(s, Mapping)]
        decided = [d for d in decided if d is not None]
        if not decided:
            continue
        questions += 1
        steps += len(decided)
        fired = sum(decided)
        triggered += fired
        hit += fired > 0
    if not steps:
        return None, None
    return triggered / steps, hit / questions
