"""Admission by deadline (``serve.admission``) and the Search-R1 ``contents`` of corpus rows
(``serve.contents``), as plain functions: what is refused, with which field and Retry-After, and
which rows keep their own text."""

from __future__ import annotations

import json

import pytest

from efficientrag.data.corpus import Corpus
from efficientrag.serve.admission import (
    RATE_HALF_LIFE,
    BatchCost,
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

# 10 questions a second, whatever the batch: the plain arithmetic of a rate.
PROPORTIONAL = BatchCost(fixed_s=0.0, per_question_s=0.1, batch=1000)


def ask(**kw):
    args = {"questions": 1, "queued": 0, "max_queue": 100, "deadline_s": 30.0, "cost": PROPORTIONAL,
            "busy_s": 0.0, "window_s": 0.01, "running": True}  # fmt: skip
    admit(**{**args, **kw})


def test_a_batch_costs_a_fixed_part_and_a_part_per_question_fitted_on_the_last_batches():
    meter = RateMeter(window=3)
    assert meter.rate is None and meter.cost(32) is None
    for questions, seconds in ((1, 2.5), (3, 4.5), (5, 6.5)):
        meter.record(questions, seconds)
    # 1.5 s whatever the size, 1 s a question, planned in batches of max_batch.
    assert meter.cost(32) == BatchCost(pytest.approx(1.5), pytest.approx(1.0), 32)
    assert meter.rate == pytest.approx(9 / 13.5)  # efficientrag_rate: the window taken together
    meter.record(0, 1.0)  # an empty or instant batch says nothing
    meter.record(4, 0.0)
    assert meter.cost(32).fixed_s == pytest.approx(1.5)


def test_a_window_that_cannot_tell_fixed_from_per_question_puts_every_second_on_the_questions():
    same = RateMeter(window=2)
    same.record(4, 2.0)
    same.record(4, 2.0)
    assert same.cost(32) == BatchCost(0.0, 0.5, 32)  # sizes all alike
    falling = RateMeter(window=2)
    falling.record(1, 3.0)
    falling.record(4, 2.0)
    # A negative slope is noise, not a cost: seconds over questions, the older batch weighing
    # 0.5 ** (1 / RATE_HALF_LIFE) of the newer.
    old = 0.5 ** (1 / RATE_HALF_LIFE)
    assert falling.cost(32) == BatchCost(0.0, pytest.approx((3.0 * old + 2.0) / (1 * old + 4)), 32)
    below_zero = RateMeter(window=2)
    below_zero.record(1, 0.5)
    below_zero.record(3, 4.5)
    # Nor is a negative fixed part.
    assert below_zero.cost(32) == BatchCost(0.0, pytest.approx((0.5 * old + 4.5) / (1 * old + 3)), 32)
    # A nearly flat line (a slow batch of 1 among fast larger ones): a question still costs half
    # the window's mean seconds a question, and the fixed part is what is left of the mean batch
    # (each mean weighted by recency: the newest batch 1, each older one 0.5 ** (1 / half-life) less).
    flat = RateMeter(window=3)
    batches = ((1, 3.0), (4, 3.1), (5, 3.9))
    for questions, seconds in batches:
        flat.record(questions, seconds)
    w = [old**2, old, 1.0]
    per_question = sum(wi * s for wi, (_, s) in zip(w, batches, strict=True)) / sum(
        wi * q for wi, (q, _) in zip(w, batches, strict=True)
    )
    mean_q = sum(wi * q for wi, (q, _) in zip(w, batches, strict=True)) / sum(w)
    mean_s = sum(wi * s for wi, (_, s) in zip(w, batches, strict=True)) / sum(w)
    slope = 0.5 * per_question
    assert flat.cost(32) == BatchCost(pytest.approx(mean_s - slope * mean_q), pytest.approx(slope), 32)


def test_more_questions_than_the_trusted_batch_are_planned_as_several_batches():
    cost = BatchCost(fixed_s=1.5, per_question_s=1.0, batch=4)
    assert cost.seconds(0) == 0.0
    assert cost.seconds(4) == 5.5
    assert cost.seconds(9) == 3 * 1.5 + 9  # batches of 4, 4 and 1
    assert cost.most_within(5.5) == 4 and cost.most_within(100.0) == 4 and cost.most_within(1.0) == 0


def test_what_fits_its_deadline_is_admitted_and_an_unmeasured_server_only_caps():
    ask(queued=184, questions=10, max_queue=1000, deadline_s=30.0)  # 0.01 + 19.4 s <= 0.65 x 30
    # 19.61 s: past ADMIT_WITHIN of the deadline, the margin for a slower batch
    with pytest.raises(Overloaded):
        ask(queued=186, questions=10, max_queue=1000, deadline_s=30.0)
    with pytest.raises(Overloaded):  # the running batch counts: 1 + 19.41 s
        ask(queued=184, questions=10, max_queue=1000, deadline_s=30.0, busy_s=1.0)
    ask(queued=90, questions=10, cost=None, deadline_s=0.001)  # nothing measured yet: the cap alone


def test_the_fixed_part_is_paid_once_a_batch_not_once_a_question():
    # ~1 s questions with 1.5 s a batch: 8 questions are a 9.5 s batch, not 8 batches of 2.5 s.
    cost = BatchCost(fixed_s=1.5, per_question_s=1.0, batch=16)
    ask(queued=7, questions=1, deadline_s=25.0, cost=cost, busy_s=6.0)  # 6 + 0.01 + 9.5 <= 16.25
    with pytest.raises(Overloaded):
        ask(queued=8, questions=1, deadline_s=25.0, cost=cost, busy_s=6.0)  # 6 + 0.01 + 10.5 > 16.25


def test_the_queue_ahead_past_the_deadline_is_503_with_retry_after_from_the_queue():
    with pytest.raises(Overloaded) as refused:
        ask(queued=50, questions=1, deadline_s=3.0, busy_s=1.5)  # 1.5 + 0.01 + 51 x 0.1 = 6.61 s
    assert refused.value.field == "queue"
    assert refused.value.wait_s == pytest.approx(6.61 - 0.65 * 3.0)  # when the queue will have room for it
    assert refused.value.retry_after_s == 5


def test_a_deadline_no_queue_could_meet_is_refused_without_retry_after():
    with pytest.raises(DeadlineImpossible) as refused:
        ask(questions=5, deadline_s=0.4)  # 0.01 + 5 x 0.1 = 0.51 s even alone
    assert refused.value.field == "deadline_ms" and refused.value.retry_after_s is None


def test_max_queue_stays_a_hard_cap():
    with pytest.raises(QueueFull) as refused:
        ask(queued=95, questions=10, max_queue=100, deadline_s=1000.0)
    assert refused.value.field == "queue" and refused.value.retry_after_s == 1  # 5 questions at 10/s


def test_callers_refused_together_come_back_in_groups_of_a_batch_at_the_servers_pace():
    slots, cost = RetrySlots(), BatchCost(0.0, 0.25, 1000)
    # Ten one-question callers refused in the same second; the queue has room for one in 2 s and
    # for a group of 4 in 2.75 s at 4 questions/s; each group comes back a group's compute later.
    waits = [slots.after(2.0, 1, cost, now=100.0, group=4) for _ in range(10)]
    assert waits == [3, 3, 3, 3, 4, 4, 4, 4, 5, 5]
    # The groups have long come back: a new one starts from the queue's own time.
    assert slots.after(2.0, 1, cost, now=200.0, group=4) == 3
    # Three more fill that group; a caller with more questions than the open group has room for
    # opens the next one, a group's compute later.
    assert slots.after(2.0, 3, cost, now=200.0, group=4) == 3
    assert slots.after(2.0, 2, cost, now=200.0, group=4) == 4
    # Groups of one: callers one after another, each one question's compute after the last.
    single = RetrySlots()
    assert [single.after(2.0, 1, cost, now=100.0) for _ in range(10)] == [2, 3, 3, 3, 3, 4, 4, 4, 4, 5]
    assert RetrySlots().after(2.5, 1, None, now=0.0) == 3  # nothing measured yet: the queue's own
    # A batch's fixed part spaces the groups too: 2 s + 4 x 0.5 s between groups of 4.
    fixed = RetrySlots()
    waits = [fixed.after(1.0, 1, BatchCost(2.0, 0.5, 8), now=0.0, group=4) for _ in range(8)]
    assert waits == [3, 3, 3, 3, 7, 7, 7, 7]


def test_a_group_is_the_largest_batch_that_fits_twice_in_what_admission_plans():
    # ~1 s questions and 1.5 s a batch: 0.65 x 25 s / 2 = 8.1 s holds a batch of 6.
    assert batch_target(BatchCost(1.5, 1.0, 32), 25.0, 32) == 6
    assert batch_target(BatchCost(1.5, 1.0, 4), 25.0, 32) == 4  # no more than the cost plans a batch as
    assert batch_target(BatchCost(0.0, 1 / 6, 64), 25.0, 32) == 32  # fast questions: max_batch
    assert batch_target(BatchCost(0.0, 100.0, 32), 25.0, 32) == 1
    assert batch_target(None, 25.0, 32) == 32


def test_a_running_batch_counts_until_it_should_have_ended():
    cost = BatchCost(0.5, 0.1, 32)
    assert running_left(cost, 20, 0.5) == pytest.approx(2.0)
    assert running_left(cost, 20, 3.0) == 0.0


def test_a_batch_is_cut_where_it_would_end_after_its_earliest_deadline():
    assert batch_room(None, 0.1, 32) == 32
    # Filled to 70% of the time left: the margin for a batch slower than the fit.
    assert batch_room(PROPORTIONAL, 1.5, 32) == 10
    assert batch_room(BatchCost(1.0, 0.1, 1000), 2.5, 32) == 7  # the batch's fixed second first
    assert batch_room(PROPORTIONAL, 100.0, 32) == 32
    assert batch_room(PROPORTIONAL, 0.0, 32) == 1  # the first request always goes


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


def test_retry_after_never_reaches_past_the_admitted_work_and_one_batch():
    cost = BatchCost(0.5, 0.25, 32)  # a group of 4: 0.5 + 4 x 0.25 = 1.5 s
    slots = RetrySlots()
    # A burst of 200 refused while the server holds 6 s of admitted work: the groups stop at 6 s
    # plus one group's batch, however many were promised before.
    waits = [slots.after(2.0, 1, cost, now=100.0, group=4, admitted_s=6.0) for _ in range(200)]
    assert waits[:4] == [3, 3, 3, 3] and waits[4] == 5  # groups a batch apart while there is room
    assert max(waits) == 8 == waits[-1]  # ceil(6 + 1.5)
    assert waits == sorted(waits)
    # The same burst without the bound: the promises chain a batch apart, 50 groups deep.
    unbounded = RetrySlots()
    assert max(unbounded.after(2.0, 1, cost, now=100.0, group=4) for _ in range(200)) > 70


def test_a_second_burst_after_idle_gets_short_waits():
    cost, slots = BatchCost(0.5, 0.25, 32), RetrySlots()
    first = [slots.after(1.0, 1, cost, now=0.0, group=4, admitted_s=30.0) for _ in range(200)]
    assert max(first) == 32
    # 15 s later the first burst's callers never came back and the server holds one batch's work:
    # nobody is sent further than that work and one more batch.
    second = [slots.after(0.5, 1, cost, now=15.0, group=4, admitted_s=1.5) for _ in range(200)]
    assert max(second) == 3 and min(second) >= 1


def test_a_request_with_no_deadline_is_planned_as_whole_batches():
    cost = BatchCost(1.5, 1.0, 32)
    assert cost.most_within(float("inf")) == 32
    assert batch_target(cost, float("inf"), 32) == 32
    assert batch_room(cost, float("inf"), 32) == 32
    admit(
        questions=512,
        queued=0,
        max_queue=4096,
        deadline_s=float("inf"),
        cost=cost,
        busy_s=5.0,
        window_s=0.01,
        running=True,
    )
