"""Seconds per question of several methods on the same questions, timed side by side in one
process, batch by batch in a rotating order: ratios between them mean something on a shared, noisy
machine where absolute times do not.
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
    warm-up batch of its own (loading and first-call costs are not counted). Every batch is run by
    every method before the next batch, the order rotating from batch to batch, so a drift of the
    machine's load slows all methods alike instead of the ones timed last.

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
    names = list(methods)
    for name in names:
        methods[name](batches[0])
    spent = dict.fromkeys(names, 0.0)
    for n, batch in enumerate(batches):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            start = time.perf_counter()
            methods[name](batch)
            spent[name] += time.perf_counter() - start
    return {name: spent[name] / len(items) for name in names}
