"""Published numbers, so a report can put a paper's figure next to ours: one module per paper.

Adding another paper: write a module here that builds its numbers with
:func:`~efficientrag.eval.paper_numbers.schema.table` and exposes them as ``NUMBERS``, and add it to
``PAPERS`` below. A method key that the harness also runs (``flare``, ``dragin``, ``fl_rag`` ...)
lines the numbers up with our runs in the report automatically; ``setting`` says what differs
(model, retriever, split).
"""

from __future__ import annotations

from collections.abc import Sequence

from efficientrag.eval.paper_numbers import dragin, efficientrag, flare
from efficientrag.eval.paper_numbers.schema import PaperNumber, table

PAPERS = (efficientrag, flare, dragin)


def all_numbers() -> tuple[PaperNumber, ...]:
    return tuple(number for paper in PAPERS for number in paper.NUMBERS)


def lookup(
    method: str, variant: str, dataset: str, metric: str, numbers: Sequence[PaperNumber] | None = None
) -> PaperNumber | None:
    for number in numbers if numbers is not None else all_numbers():
        if (number.method, number.variant, number.dataset, number.metric) == (
            method,
            variant,
            dataset,
            metric,
        ):
            return number
    return None


__all__ = ["PAPERS", "PaperNumber", "all_numbers", "lookup", "table"]
