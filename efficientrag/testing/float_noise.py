"""Compare two results that ran through different float32 kernels: everything exactly but the floats.

Why: a float32 matrix product's last bits depend on how the work is cut. The batch shape (a question
alone or among others, padded to another length), the instruction set torch picks (AVX512, AVX2 or
the plain kernels; ``ATEN_CPU_CAPABILITY`` forces one), and the thread count (``OMP_NUM_THREADS``)
each change the order of the additions, so the server's micro-batch and a one-at-a-time library
call give the same chunks with Continue probabilities that differ in their last digits (about
1e-7). A test that compares such results with ``==`` passes only where it was written.

What compares exactly: every id, tag, text, flag, count, and the order and length of every list
and the keys of every dict, so a changed decision, a reordered pool or a dropped hop still fails.
What compares within ``abs_tol`` (:data:`FLOAT_TOLERANCE`, 1e-5 by default): every float
(probabilities, retriever scores). Kernel noise on these values is about 1e-7: across batch shapes,
AVX512 / AVX2 / plain kernels (``ATEN_CPU_CAPABILITY``) and 1 or 2 threads, the Labeler's
probabilities and the encoders' scores in this suite moved by at most 1.3e-7, some eighty times
under the tolerance. A real change (other weights, a pair judged against another chunk, another
score formula) moves them by far more: trained models' probabilities spread over [0, 1], and even
the tests' random tiny models, whose probabilities all sit within 2e-3 of 0.5, give two pairs
probabilities a median 5e-4 apart (nine in ten pairs more than 4e-5). What the tolerance cannot
see, the ids, tags and order still do.

Results of the very same computation (same batch shape, same process) are bit-identical and may
still be compared with ``==``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Iterator, Mapping
from typing import Any

FLOAT_TOLERANCE = 1e-5
_IDENTIFIER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def as_plain(value: Any, *, drop_keys: Collection[str] = ()) -> Any:
    """``value`` as plain dicts, lists and scalars, so results of any shape compare field by field.

    Objects with ``to_dict()`` (the trace, Haystack Documents) or ``toDict()`` (DSPy) become what
    that returns; pydantic models (LangChain Documents, LlamaIndex nodes, the service's bodies)
    ``model_dump()``; other dataclasses (``RetrievalResult``, ``Chunk``) their fields; tuples lists;
    numpy and torch numbers and arrays Python ones. Anything else is kept as it is.

    Args:
        value: The result to convert.
        drop_keys: Dict keys left out wherever they occur (e.g. ``timings_s``, which no rerun repeats).

    Returns:
        The plain form of ``value``.
    """
    plain = _one_level(value)
    if plain is not value:
        return as_plain(plain, drop_keys=drop_keys)
    if isinstance(value, Mapping):
        return {k: as_plain(v, drop_keys=drop_keys) for k, v in value.items() if k not in drop_keys}
    if isinstance(value, (list, tuple)):
        return [as_plain(v, drop_keys=drop_keys) for v in value]
    return value


def _one_level(value: Any) -> Any:
    """The next plainer form of ``value`` (``value`` itself when it is already plain or opaque)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes, Mapping, list, tuple)):
        return value
    for method in ("to_dict", "toDict", "model_dump", "tolist"):
        convert = getattr(value, method, None)
        if callable(convert) and not isinstance(value, type):
            return convert()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    item = getattr(value, "item", None)  # numpy / torch scalars without tolist
    return item() if callable(item) else value


def float_pairs(actual: Any, expected: Any) -> Iterator[tuple[str, Any, Any]]:
    """Every leaf of the two plain trees side by side, with its path; where the structures part
    (other keys, other lengths, a list against a scalar) the two subtrees are one pair.

    Args:
        actual: A plain tree (see :func:`as_plain`).
        expected: The plain tree to compare it with.

    Yields:
        ``(path, actual_leaf, expected_leaf)``, e.g. ``("[1].trace[0].hits[3].continue_prob", 0.49, 0.49)``.
    """
    yield from _pairs(actual, expected, "")


def _pairs(actual: Any, expected: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            yield path, actual, expected
            return
        for key in expected:
            yield from _pairs(actual[key], expected[key], path + _key_step(key))
    elif isinstance(actual, list) and isinstance(expected, list):
        if len(actual) != len(expected):
            yield path, actual, expected
            return
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            yield from _pairs(a, e, f"{path}[{i}]")
    else:
        yield path, actual, expected


def _key_step(key: Any) -> str:
    if isinstance(key, str) and key and not key[0].isdigit() and set(key) <= _IDENTIFIER_CHARS:
        return f".{key}"
    return f"[{key!r}]"


def _is_float_pair(a: Any, b: Any) -> bool:
    """Both are real numbers (not bools) and at least one is a float: compared within the tolerance."""
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    return numbers and (isinstance(a, float) or isinstance(b, float))


def _leaf_deviation(a: Any, b: Any) -> float | None:
    """``|a - b|`` for a float pair (0 for two NaNs), None for any other pair."""
    if not _is_float_pair(a, b):
        return None
    if math.isnan(a) and math.isnan(b):
        return 0.0
    return abs(a - b)


def max_float_deviation(actual: Any, expected: Any) -> float:
    """The largest difference between two results' paired floats, for reporting the noise a
    platform shows (0.0 when no float differs or there is none).

    Args:
        actual: A result (any form :func:`as_plain` takes).
        expected: The result to compare it with.

    Returns:
        The largest ``|actual - expected|`` over the float leaves both hold at the same path.
    """
    worst = 0.0
    for _, a, b in float_pairs(as_plain(actual), as_plain(expected)):
        deviation = _leaf_deviation(a, b)
        if deviation is not None:
            worst = max(worst, deviation)
    return worst


def float_noise_differences(
    actual: Any, expected: Any, *, abs_tol: float = FLOAT_TOLERANCE, drop_keys: Collection[str] = ()
) -> list[str]:
    """What differs between two results beyond float noise, one line per difference.

    Args:
        actual: A result (any form :func:`as_plain` takes).
        expected: The result it should equal.
        abs_tol: How far two floats may be apart.
        drop_keys: Dict keys left out of both wherever they occur.

    Returns:
        ``"path: actual != expected"`` lines, in tree order; empty when the two agree.
    """
    out = []
    pairs = float_pairs(as_plain(actual, drop_keys=drop_keys), as_plain(expected, drop_keys=drop_keys))
    for path, a, b in pairs:
        deviation = _leaf_deviation(a, b)
        if deviation is None:
            if a != b:
                out.append(f"{path or '<root>'}: {a!r} != {b!r}")
        elif not deviation <= abs_tol:  # a NaN against a number is a difference too
            out.append(f"{path or '<root>'}: {a!r} != {b!r} (off by {deviation:.2g}, tolerance {abs_tol:g})")
    return out


def assert_same_up_to_float_noise(
    actual: Any, expected: Any, *, abs_tol: float = FLOAT_TOLERANCE, drop_keys: Collection[str] = ()
) -> None:
    """Fail unless the two results are equal, floats within ``abs_tol`` and everything else exactly.

    Args:
        actual: A result (any form :func:`as_plain` takes).
        expected: The result it should equal.
        abs_tol: How far two floats may be apart (default :data:`FLOAT_TOLERANCE`).
        drop_keys: Dict keys left out of both wherever they occur (e.g. ``timings_s``).

    Returns:
        None.

    Raises:
        AssertionError: Naming the path of the first difference (and how many there are).
    """
    differences = float_noise_differences(actual, expected, abs_tol=abs_tol, drop_keys=drop_keys)
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        raise AssertionError(f"first difference at {differences[0]}{more}")
