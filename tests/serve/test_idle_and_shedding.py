"""On a real uvicorn server over a backend the test holds (``serve_harness``):

- a warm-up measured while the machine was busy (the backend slowed down, then let go) refuses
  nothing on the idle server that follows, and the cost estimate comes back down;
- a request's own fault gets its 4xx naming the field, even where admission would refuse it;
- under a standing queue, one-query Search-R1 calls that name no deadline are sent back (503 +
  Retry-After) once past the target, the newest is answered first, and a rollout's batch that names
  none is answered whole.
"""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from efficientrag.serve.app import WARMUP_QUESTIONS  # noqa: E402
from tests.serve.serve_harness import (  # noqa: E402
    HOLD,
    SLOW,
    Server,
    harness_argv,
    harness_client,
    labeled_metric,
    metric,
    searched,
    wait_until,
)
from tests.serve.test_overload import in_background, join  # noqa: E402

DEADLINE_S = 3.0
TARGET_S = 2.0
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The warm-up runs with every search taking 3 s longer (the machine busy with something else):
    a question then costs more than the interactive deadline allows. The slowness goes before the
    first request."""
    root = tmp_path_factory.mktemp("serve-idle")
    argv, control = harness_argv(root, "--top-k", "3", "--floor-k", "2", "max_batch=8",
                                 f"deadline_s={DEADLINE_S}", f"queue_target_s={TARGET_S}",
                                 f"queue_interval_s={TARGET_S}", "bulk_queries=8", "access_log=false")  # fmt: skip
    (control / SLOW).write_text("3")
    server = Server(argv, root / "server.log")
    (control / SLOW).unlink()
    with harness_client(server, control) as client:
        yield server, client, control


def test_an_idle_server_answers_whatever_its_warm_up_measured(served):
    _, client, control = served
    assert searched(control)[:1] == list(WARMUP_QUESTIONS[:1])
    warm = metric(client, "efficientrag_batch_cost_per_question_seconds") + metric(
        client, "efficientrag_batch_cost_fixed_seconds"
    )
    assert warm > 0.65 * DEADLINE_S  # the estimate alone would refuse a one-question request
    for i in range(6):
        reply = client.post("/v1/retrieve", json={"question": f"Who directed Film {i}?"})
        assert reply.status_code == 200, reply.text
    fresh = metric(client, "efficientrag_batch_cost_per_question_seconds") + metric(
        client, "efficientrag_batch_cost_fixed_seconds"
    )
    assert fresh < 0.25 * warm  # the fit follows the fresh batches
    assert labeled_metric(client, "efficientrag_errors_total", kind="overloaded") == 0


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/retrieve", {"questions": ["Where was Person 1 born?", "\udfff"]}, "questions[1]"),
        ("/v1/retrieve", {"questions": ["Where was Person 1 born?", ""]}, "questions[1]"),
        ("/v1/retrieve", {"question": "Who directed Film 1?", "settings": {"top_k": 0}}, "settings.top_k"),
        ("/v1/retrieve", {"question": "Who directed Film 1?", "settings": {"top_k": 500}}, "settings.top_k"),
        ("/retrieve", {"queries": ["Where was Person 1 born?", "\udfff"]}, "queries[1]"),
        ("/retrieve", {"queries": ["Where was Person 1 born?"], "topk": 1}, "settings.chunk_budget"),
    ],
)
def test_content_is_checked_before_admission(served, path, body, field):
    """A 1 ms deadline is refused by admission on any server (it is inside the batching window);
    a request's own fault comes first."""
    _, client, control = served
    before = len(searched(control))
    # Sent as Python's json writes it (a lone surrogate as its \u escape, which is valid JSON).
    reply = client.post(path, content=json.dumps({**body, "deadline_ms": 1}), headers=JSON)
    assert reply.status_code == 422 and reply.json()["field"] == field, reply.text
    fine = {"queries": ["Where was Person 1 born?"]} if path == "/retrieve" else {"question": "Who?"}
    refused = client.post(path, json={**fine, "deadline_ms": 1})
    assert refused.status_code == 503 and refused.json()["field"] == "deadline_ms", refused.text
    assert len(searched(control)) == before


def test_under_a_standing_queue_stale_single_queries_are_sent_back_and_a_rollout_is_answered(served):
    _, client, control = served
    for size in (1, 2, 3, 4, 1, 2, 3, 4):  # batches of this server's own load fill the cost's window
        questions = [f"Who directed Film {i}?" for i in range(size)]
        assert client.post("/v1/retrieve", json={"questions": questions}).status_code == 200
    (control / HOLD).touch()
    # Running (so never sent back) and with no deadline (held as long as the test needs).
    # Running (so never sent back) and naming no deadline (held as long as the test needs).
    blocker = in_background(lambda _: client.post("/retrieve", json={"queries": ["Who directed Film 9?"]}), 1)
    wait_until(lambda: metric(client, "efficientrag_in_flight") == 1, "the held batch to start")
    shed_before = labeled_metric(client, "efficientrag_errors_total", kind="shed")
    start = len(searched(control))

    def one_query(i: int):
        return client.post("/retrieve", json={"queries": [f"Where was Person {i} born?"], "topk": 3})

    stale = in_background(one_query, 10)
    rollout_queries = [f"Which film did Person {i % 20} direct?" for i in range(24)]
    rollout = in_background(
        lambda _: client.post("/retrieve", json={"queries": rollout_queries, "topk": 3}), 1
    )
    wait_until(lambda: metric(client, "efficientrag_queue_depth") == 10 + 24, "the queue to hold them")
    time.sleep(3 * TARGET_S)  # the oldest waits past the target for longer than the interval
    fresh = in_background(lambda _: one_query(17), 1)
    wait_until(lambda: metric(client, "efficientrag_queue_depth") == 10 + 24 + 1, "the fresh call to queue")
    (control / HOLD).unlink()
    for threads, _ in (blocker, stale, rollout, fresh):
        join(threads)
    assert blocker[1][0].status_code == 200
    # The batch after the blocker takes the newest 8 (max_batch) of the open calls, the fresh one
    # first; the 3 it leaves, waiting past the target, are sent back and never computed.
    sent_back = [r for r in stale[1] if r.status_code == 503]
    assert len(sent_back) == 3 and all(r.status_code in (200, 503) for r in stale[1])
    for reply in sent_back:
        assert reply.json()["field"] == "queue" and 1 <= int(reply.headers["Retry-After"]) <= 60, reply.text
    assert fresh[1][0].status_code == 200, fresh[1][0].text
    result = rollout[1][0].json()["result"]
    assert rollout[1][0].status_code == 200 and len(result) == 24 and all(result)
    assert labeled_metric(client, "efficientrag_errors_total", kind="shed") == shed_before + 3
    asked = searched(control)[start:]
    assert sum(f"Where was Person {i} born?" in asked for i in range(10)) == 7
    assert asked.index("Where was Person 17 born?") < asked.index(rollout_queries[0])  # newest first
    wait_until(lambda: metric(client, "efficientrag_in_flight") == 0, "the server to be idle")
