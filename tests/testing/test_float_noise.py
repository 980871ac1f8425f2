"""The float-noise comparison: floats within the tolerance, everything else exactly, and the path of
the first difference in the message. It must fail on every real change (an id, a tag, the order, a
float off by 1e-3), or the tests that use it could not fail."""

from __future__ import annotations

import copy
import math

import pytest

from efficientrag.data.schema import Chunk
from efficientrag.pipeline.efficientrag import RetrievalResult
from efficientrag.pipeline.trace import HitRecord, Hop
from efficientrag.testing.float_noise import (
    FLOAT_TOLERANCE,
    as_plain,
    assert_same_up_to_float_noise,
    float_noise_differences,
    max_float_deviation,
)


def result(prob: float = 0.4991091, second_id: str = "bob", tag: str = "continue") -> RetrievalResult:
    hits = [
        HitRecord("alpha", 3.0, False, tag="continue", continue_prob=0.9, labeled_words=["Bob"]),
        HitRecord(second_id, 2.0, False, tag=tag, continue_prob=prob, labeled_words=["Paris"]),
    ]
    hop = Hop(0, ["Who?"], [hits], ["Bob Stone"], {"labeler": 0.01})
    chunks = [Chunk("alpha", "Alpha", "Alpha is a film."), Chunk(second_id, "Bob", "Bob was born.")]
    return RetrievalResult("Who?", chunks, [0.9, prob], [hop], {"hops": 1})


def test_floats_within_the_tolerance_are_equal():
    noisy = result(0.4991091 + 3e-7)
    assert_same_up_to_float_noise([result(), noisy], [result(), result()], drop_keys=("timings_s",))
    assert max_float_deviation(noisy, result()) == pytest.approx(3e-7, rel=1e-3)
    assert float_noise_differences(noisy, result()) == []


@pytest.mark.parametrize(
    ("actual", "path"),
    [
        (result(0.4991091 + 1e-3), ".scores[1]"),  # a float off by 1e-3
        (result(second_id="carla"), ".chunks[1].id"),  # a changed id
        (result(tag="terminate"), ".trace[0].hits[0][1].tag"),  # a changed tag
    ],
    ids=["float", "id", "tag"],
)
def test_a_real_change_fails_naming_its_path(actual, path):
    with pytest.raises(AssertionError, match=r"first difference at \[1\]" + path.replace("[", r"\[")):
        assert_same_up_to_float_noise([result(), actual], [result(), result()])


def test_the_message_shows_both_values_and_the_count():
    with pytest.raises(AssertionError) as info:
        assert_same_up_to_float_noise(result(0.4995), result(0.4991))
    message = str(info.value)
    assert message.startswith("first difference at .scores[1]: 0.4995 != 0.4991 (off by 0.0004")
    assert "(and 1 more)" in message  # the same probability in the trace


def test_order_length_keys_and_kinds_compare_exactly():
    reordered = result()
    reordered.chunks.reverse()
    with pytest.raises(AssertionError, match=r"at \.chunks\[0\]\.id: 'bob' != 'alpha'"):
        assert_same_up_to_float_noise(reordered, result())
    shorter = result()
    shorter.trace[0].hits[0].pop()
    with pytest.raises(AssertionError, match=r"at \.trace\[0\]\.hits\[0\]: \[\{"):
        assert_same_up_to_float_noise(shorter, result())
    with pytest.raises(AssertionError, match=r"at <root>: \{'a': 1\} != \{'b': 1\}"):
        assert_same_up_to_float_noise({"a": 1}, {"b": 1})
    for actual, expected in [(None, 0.5), (math.nan, 0.5), (True, False), (3, 4), ("0.5", 0.5), (1, [1])]:
        assert float_noise_differences(actual, expected), (actual, expected)
    assert float_noise_differences({"x": math.nan, "n": 2}, {"n": 2, "x": math.nan}) == []  # key order free


def test_the_tolerance_is_absolute_and_adjustable():
    assert float_noise_differences(0.5 + 0.9 * FLOAT_TOLERANCE, 0.5) == []
    assert float_noise_differences(0.5 + 1.1 * FLOAT_TOLERANCE, 0.5)
    assert float_noise_differences(1000.0 + 1e-3, 1000.0)  # large values get no relative slack
    assert float_noise_differences(0.5 + 1e-4, 0.5, abs_tol=1e-3) == []
    assert float_noise_differences(1, 1.000001) == []  # an int against a float is a number


def test_as_plain_takes_dataclasses_to_dict_pydantic_and_arrays():
    np = pytest.importorskip("numpy")
    pydantic = pytest.importorskip("pydantic")

    class Body(pydantic.BaseModel):
        ids: tuple[str, ...]
        score: float

    plain = as_plain({"r": result(), "body": Body(ids=("a", "b"), score=0.5), "v": np.float32(0.25)})
    assert plain["body"] == {"ids": ["a", "b"], "score": 0.5} and plain["v"] == 0.25
    assert plain["r"]["chunks"][0] == {"id": "alpha", "title": "Alpha", "text": "Alpha is a film."}
    assert plain["r"]["trace"][0] == result().trace[0].to_dict()  # the trace's own JSON
    assert as_plain(np.array([[1.5, 2.0]])) == [[1.5, 2.0]]
    assert "timings_s" not in as_plain(result(), drop_keys=("timings_s",))["trace"][0]
    untouched = copy.deepcopy(result())
    as_plain(untouched, drop_keys=("timings_s",))
    assert untouched.trace[0].timings_s == {"labeler": 0.01}  # the input is not changed
