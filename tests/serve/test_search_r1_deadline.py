"""A Search-R1 rollout's batch is never cut by the deadline meant for interactive callers, and a cold
server plans its first request with the cost it measured at warm-up. A real uvicorn server in a
subprocess over a backend the test can hold (``serve_harness``), with an interactive deadline of
one second."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from efficientrag.serve.app import WARMUP_QUESTIONS  # noqa: E402
from tests.serve.serve_harness import (  # noqa: E402
    HOLD,
    Server,
    harness_argv,
    harness_client,
    labeled_metric,
    metric,
    searched,
    wait_until,
)

DEADLINE_S = 1


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-search-r1-deadline")
    argv, control = harness_argv(root, "--top-k", "3", "--floor-k", "2", "max_batch=8",
                                 f"deadline_s={DEADLINE_S}", "max_queries=512", "access_log=false")  # fmt: skip
    server = Server(argv, root / "server.log")
    with harness_client(server, control) as client:
        yield server, client, control


def test_a_cold_server_plans_with_its_warm_up_and_refuses_an_impossible_deadline_before_any_work(served):
    _, client, control = served
    assert searched(control)[: len(WARMUP_QUESTIONS) - 3] == list(WARMUP_QUESTIONS[:1])  # alone first
    assert metric(client, "efficientrag_batch_cost_per_question_seconds") > 0
    assert metric(client, "efficientrag_batch_size_count") == 0  # no request has run yet
    before = len(searched(control))
    questions = [f"Who directed Film {i}, asked in no time?" for i in range(40)]
    reply = client.post("/retrieve", json={"queries": questions, "deadline_ms": 1})
    assert reply.status_code == 503 and reply.json()["field"] == "deadline_ms", reply.text
    assert len(searched(control)) == before
    assert labeled_metric(client, "efficientrag_errors_total", kind="impossible_deadline") == 1


def test_a_rollout_with_no_deadline_is_answered_however_long_it_takes(served):
    """The backend is held past the interactive deadline while the rollout's batch runs: a
    /v1/retrieve call meanwhile is cut (503 or 504), the rollout is answered whole."""
    _, client, control = served
    queries = [f"Where was Person {i % 20} born?" for i in range(40)] + ["", "\u200b"]
    replies: dict[str, httpx.Response] = {}
    (control / HOLD).touch()

    def rollout() -> None:
        replies["rollout"] = client.post("/retrieve", json={"queries": queries, "topk": 3})

    thread = threading.Thread(target=rollout)
    thread.start()
    wait_until(lambda: metric(client, "efficientrag_in_flight") > 0, "the rollout's first batch to run")
    interactive = client.post("/v1/retrieve", json={"question": "Who directed Film 3?"})
    time.sleep(DEADLINE_S + 0.5)  # past the interactive deadline, with the rollout still held
    (control / HOLD).unlink()
    thread.join(timeout=120)
    assert interactive.status_code in (503, 504), interactive.text
    reply = replies["rollout"]
    assert reply.status_code == 200, reply.text
    result = reply.json()["result"]
    assert len(result) == len(queries) and all(result[:40]) and result[40:] == [[], []]
    assert (
        labeled_metric(client, "efficientrag_errors_total", kind="deadline")
        + labeled_metric(client, "efficientrag_errors_total", kind="overloaded")
        >= 1
    )
