"""Admission by deadline (``serve.admission``) and the Search-R1 ``contents`` of corpus rows
(``serve.contents``), as plain functions: what is refused, with which field and Retry-After, and
which rows keep their own text."""

from __future__ import annotations

import json

import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.serve.admission import (
    DeadlineImpossible,
    Overloaded,
    QueueFull,
    RateMeter,
    RetrySlots,
    admit,
    batch_room,
    batch_target,
    running_left,
)
from efficientrag.serve.contents import PLAIN, QUOTED, read_contents


def ask(**kw):
    args = {"questions": 1, "queued": 0, "max_queue": 100, "deadline_s": 30.0, "rate": 10.0,
            "busy_s": 0.0, "window_s": 0.01}  # fmt: skip
    admit(**{**args, **kw})


def test_the_rate_is_the_slowest_of_the_last_batches():
    meter = RateMeter(window=2)
    assert meter.rate is None
    meter.record(10, 2.0)
    meter.record(30, 2.0)
    assert meter.rate == 5.0
    meter.record(8, 1.0)  # the first batch falls out of the window
    assert meter.rate == 8.0
    meter.record(0, 1.0)  # an empty or instant batch says nothing
    assert meter.rate == 8.0
    assert meter.mean_rate == (30 + 8) / 3.0  # the pace over the window, for Retry-After slots


def test_what_fits_its_deadline_is_admitted_and_an_unmeasured_server_only_caps():
    ask(queued=230, questions=10, max_queue=1000, deadline_s=30.0)  # (230 + 10) / 10 = 24 s = 0.8 x 30
    with pytest.raises(Overloaded):  # 25 s: past ADMIT_WITHIN of the deadline, the margin for a slower rate
        ask(queued=240, questions=10, max_queue=1000, deadline_s=30.0)
    with pytest.raises(Overloaded):  # the running batch counts: 1 + 24 s
        ask(queued=230, questions=10, max_queue=1000, deadline_s=30.0, busy_s=1.0)
    ask(queued=90, questions=10, rate=None, deadline_s=0.001)  # nothing measured yet: the cap alone


def test_the_queue_ahead_past_the_deadline_is_503_with_retry_after_from_the_queue():
    with pytest.raises(Overloaded) as refused:
        ask(queued=50, questions=1, deadline_s=3.0, busy_s=1.5)  # 1.5 + 51/10 = 6.6 s
    assert refused.value.field == "queue"
    assert refused.value.wait_s == pytest.approx(6.6 - 0.8 * 3.0)  # when the queue will have room for it
    assert refused.value.retry_after_s == 5


def test_a_deadline_no_queue_could_meet_is_refused_without_retry_after():
    with pytest.raises(DeadlineImpossible) as refused:
        ask(questions=5, deadline_s=0.4)  # 0.01 + 5/10 = 0.51 s even alone
    assert refused.value.field == "deadline_ms" and refused.value.retry_after_s is None


def test_max_queue_stays_a_hard_cap():
    with pytest.raises(QueueFull) as refused:
        ask(queued=95, questions=10, max_queue=100, deadline_s=1000.0)
    assert refused.value.field == "queue" and refused.value.retry_after_s == 1  # 5 questions at 10/s


def test_callers_refused_together_come_back_in_groups_of_a_batch_at_the_servers_pace():
    slots = RetrySlots()
    # Ten one-question callers refused in the same second; the queue has room for one in 2 s and
    # for a group of 4 in 2.75 s at 4 questions/s; each group comes back a group's compute later.
    waits = [slots.after(2.0, 1, 4.0, now=100.0, group=4) for _ in range(10)]
    assert waits == [3, 3, 3, 3, 4, 4, 4, 4, 5, 5]
    # The groups have long come back: a new one starts from the queue's own time.
    assert slots.after(2.0, 1, 4.0, now=200.0, group=4) == 3
    # Three more fill that group; a caller with more questions than the open group has room for
    # opens the next one, a group's compute later.
    assert slots.after(2.0, 3, 4.0, now=200.0, group=4) == 3
    assert slots.after(2.0, 2, 4.0, now=200.0, group=4) == 4
    # Groups of one: callers one after another, each one question's compute after the last.
    single = RetrySlots()
    assert [single.after(2.0, 1, 4.0, now=100.0) for _ in range(10)] == [2, 3, 3, 3, 3, 4, 4, 4, 4, 5]
    assert RetrySlots().after(2.5, 1, None, now=0.0) == 3  # no rate yet: the queue's own


def test_a_group_is_half_of_what_the_deadline_admits():
    assert batch_target(0.8, 25.0, 32) == 8  # ~1 s questions: 0.8 x 25 s x 0.8/s = 16, two batches of 8
    assert batch_target(6.0, 25.0, 32) == 32  # fast questions: max_batch
    assert batch_target(0.01, 25.0, 32) == 1
    assert batch_target(None, 25.0, 32) == 32


def test_a_running_batch_counts_until_it_should_have_ended():
    assert running_left(10.0, 20, 0.5) == 1.5
    assert running_left(10.0, 20, 3.0) == 0.0


def test_a_batch_is_cut_where_it_would_end_after_its_earliest_deadline():
    assert batch_room(None, 0.1, 32) == 32
    assert batch_room(10.0, 1.5, 32) == 15
    assert batch_room(10.0, 100.0, 32) == 32
    assert batch_room(10.0, 0.0, 32) == 1  # the first request always goes


def write(tmp_path, rows):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_wiki18_style_corpus_keeps_its_quoted_titles(tmp_path):
    rows = [{"id": str(i), "contents": f'"Title {i}"\nText {i}.'} for i in range(5)]
    rows.append({"id": "odd", "contents": "Plain title\nIts text."})
    path = write(tmp_path, rows)
    contents = read_contents([path])
    assert contents.style == QUOTED and set(contents.exceptions) == {"odd"}
    own = {r["id"]: r["contents"] for r in rows}
    for chunk in Corpus.load(path):
        assert chunk.title.startswith("Title") is (chunk.id != "odd") and '"' not in chunk.title
        assert contents.contents(chunk) == own[chunk.id]


def test_title_and_text_rows_are_the_flashrag_row_they_would_be(tmp_path):
    rows = [
        {"id": "a", "title": "Alpha", "text": "Alpha is a film."},
        {"id": "b", "contents": "no title at all"},
    ]
    path = write(tmp_path, rows)
    contents = read_contents([path])
    assert contents.style == PLAIN and set(contents.exceptions) == {"b"}
    got = {c.id: contents.contents(c) for c in Corpus.load(path)}
    assert got == {"a": "Alpha\nAlpha is a film.", "b": "no title at all"}
