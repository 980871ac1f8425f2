"""Argument checks shared by every backend's ``search``: fail on a caller's bug, not on a bad query."""

from __future__ import annotations

import operator
from collections.abc import Sequence

from efficientrag.errors import InvalidArgumentError, WrongTypeError


def check_search_args(queries: Sequence[str], k: int) -> tuple[list[str], int]:
    """The queries as a list, and ``k`` as an int. A bare string (which would be searched letter
    by letter), a non-string query or a negative ``k`` raise; empty queries are left to the
    backend, which answers them with no hits."""
    if isinstance(queries, str):
        raise WrongTypeError("search() takes a list of queries; wrap a single query in a list")
    try:
        k = operator.index(k)
    except TypeError:
        raise InvalidArgumentError(f"k must be an integer >= 0, got {k!r}") from None
    if k < 0:
        raise InvalidArgumentError(f"k must be an integer >= 0, got {k}")
    out = list(queries)
    for i, q in enumerate(out):
        if not isinstance(q, str):
            raise WrongTypeError(f"query {i} is {type(q).__name__}, expected str")
    return out, k
