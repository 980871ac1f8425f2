"""Seconds per question of several methods on the same questions, timed one after another in one
process: ratios between them mean something on a shared, noisy machine where absolute times do not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from efficientrag.errors import InvalidArgumentError

T = TypeVar("T")


def time_methods(
    methods: Mapping[str, Callable[[list[T]], Any]], items: Sequence[T], *, batch_size: int = 32
) -> dict[str, float]:
    """Each method's seconds per item, over ``items`` in batches of ``batch_size``, after one
    warm-up batch of its own (loading and first-call costs are not counted).

    Args:
        methods: Name -> a callable that runs one batch.
        items: The questions (or whatever the methods take).
        batch_size: Items per call.

    Raises:
        ValueError: No items.
    """
    if not items:
        raise InvalidArgumentError("time_methods: nothing to time")
    batches = [list(items[i : i + batch_size]) for i in range(0, len(items), batch_size)]
    out = {}
    for name, run in methods.items():
        run(batches[0])
        start = time.perf_counter()
        for batch in batches:
            run(batch)
        out[name] = (time.perf_counter() - start) / len(items)
    return out
