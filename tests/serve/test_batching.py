"""``create_app`` behind the real runner in a subprocess, over a backend the tests can hold or break:
micro-batched replies equal one-at-a-time ones, the bounded queue, deadlines, a backend that goes
down and comes back, the bearer token, and SIGTERM draining the requests in flight (last).

Every wait here is for a state of the server (a queue depth, a refused connection), never a time.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from efficientrag.testing.float_noise import assert_same_up_to_float_noise  # noqa: E402
from tests.serve.serve_harness import FAIL, HOLD, Server, harness_argv, harness_client, metric, wait_until  # noqa: E402

TOKEN = "s3cret-token-for-tests-only"
QUESTIONS = [f"Where was the director of Film {i} born?" for i in range(5)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-batching")
    argv, control = harness_argv(root, "max_batch=8", "max_queue=6", "max_wait_ms=20", "access_log=false")
    server = Server(argv, root / "server.log", env={"EFFICIENTRAG_API_KEY": TOKEN})
    with harness_client(server, control, TOKEN) as client:
        yield server, client, control


def ask(client: httpx.Client, body: dict) -> httpx.Response:
    return client.post("/v1/retrieve", json=body)


def in_background(client: httpx.Client, bodies: list[dict]) -> tuple[list[threading.Thread], list]:
    replies: list = [None] * len(bodies)

    def send(i: int) -> None:
        replies[i] = ask(client, bodies[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    return threads, replies


def hold_one_batch(client: httpx.Client, control: Path) -> tuple[list[threading.Thread], list]:
    """A request whose batch is running and held inside the backend's search."""
    (control / HOLD).touch()
    blocker = in_background(client, [{"question": "Who directed Film 9?"}])
    wait_until(lambda: metric(client, "efficientrag_in_flight") == 1, "the held batch to start")
    return blocker


def release(control: Path, *groups) -> None:
    (control / HOLD).unlink()
    for threads, _ in groups:
        for t in threads:
            t.join(timeout=120)


def without_timings(reply: dict) -> dict:
    for result in reply["results"]:
        for hop in result.get("trace", []):
            hop.pop("timings_s")
    return reply


def test_the_api_needs_the_token_but_probes_do_not(served):
    server, client, _ = served
    anonymous = httpx.Client(base_url=server.url, timeout=60)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        reply = anonymous.post("/v1/retrieve", json={"question": "Who directed Film 1?"}, headers=headers)
        assert reply.status_code == 401 and reply.json()["field"] == "authorization"
        assert reply.headers["WWW-Authenticate"] == "Bearer"
        assert TOKEN not in reply.text
    assert anonymous.get("/metrics").status_code == 401
    assert anonymous.post("/retrieve", json={"queries": ["x"]}).status_code == 401
    assert anonymous.get("/healthz").status_code == 200 and anonymous.get("/").status_code == 200
    assert ask(client, {"question": "Who directed Film 1?"}).status_code == 200


@pytest.mark.numerics
def test_micro_batched_replies_equal_one_at_a_time_replies(served):
    """Equal up to float noise: a batch of five runs other kernels than a batch of one (ids, tags
    and order exactly; probabilities within :data:`~efficientrag.testing.float_noise.FLOAT_TOLERANCE`)."""
    _, client, control = served
    batches, sizes, busy = (
        metric(client, "efficientrag_batch_size_count"),
        metric(client, "efficientrag_batch_size_sum"),
        metric(client, "efficientrag_batch_seconds_total"),
    )
    blocker = hold_one_batch(client, control)
    queued = in_background(client, [{"question": q, "trace": True} for q in QUESTIONS])
    wait_until(lambda: metric(client, "efficientrag_queue_depth") == len(QUESTIONS), "all five to queue")
    release(control, blocker, queued)
    # The held batch, then the five queued questions in one batch.
    assert metric(client, "efficientrag_batch_size_count") == batches + 2
    assert metric(client, "efficientrag_batch_size_sum") == sizes + 1 + len(QUESTIONS)
    # The worker's busy time grew by both batches' compute, the held one's included.
    assert metric(client, "efficientrag_batch_seconds_total") > busy
    together = [without_timings(r.json()) for r in queued[1]]
    alone = [without_timings(ask(client, {"question": q, "trace": True}).json()) for q in QUESTIONS]
    assert [r.status_code for r in queued[1]] == [200] * len(QUESTIONS)
    assert_same_up_to_float_noise(together, alone)
    assert any(len(r["results"][0]["trace"]) > 1 for r in alone)  # the loop did hop


def test_a_full_queue_is_503_with_retry_after_and_nothing_is_lost(served):
    _, client, control = served
    blocker = hold_one_batch(client, control)
    filling = in_background(client, [{"questions": [f"Who directed Film {i}?" for i in range(6)]}])
    wait_until(lambda: metric(client, "efficientrag_queue_depth") == 6, "the queue to fill")
    refused = ask(client, {"question": "Who directed Film 2?"})
    assert refused.status_code == 503 and refused.json()["field"] == "queue"
    assert int(refused.headers["Retry-After"]) >= 1
    release(control, blocker, filling)
    assert filling[1][0].status_code == 200 and len(filling[1][0].json()["results"]) == 6
    assert ask(client, {"question": "Who directed Film 2?"}).status_code == 200


def test_a_request_past_its_deadline_is_504_and_leaves_the_queue(served):
    """A deadline the server expects to meet (admission lets it in), missed because the batch ahead
    is held: 504 once it passes, and the request leaves the queue."""
    _, client, control = served
    blocker = hold_one_batch(client, control)
    rate = metric(client, "efficientrag_rate")
    assert rate > 0  # measured on the earlier tests' batches
    # Admitted: the batching window (20 ms) plus the held batch's and its own question, twice over.
    deadline_ms = int(1000 * (0.02 + 4 / rate)) + 1
    late = ask(client, {"question": "Who directed Film 3?", "deadline_ms": deadline_ms})
    assert late.status_code == 504 and late.json()["field"] == "deadline_ms"
    assert "before a batch took it" in late.json()["detail"]
    assert metric(client, "efficientrag_queue_depth") == 0
    release(control, blocker)
    assert blocker[1][0].status_code == 200


@pytest.mark.parametrize(("state", "status"), [("down", 503), ("broken", 502)])
def test_a_failing_backend_is_named_readyz_turns_red_and_the_server_recovers(served, state, status):
    _, client, control = served
    (control / FAIL).write_text(state)
    try:
        reply = ask(client, {"question": "Who directed Film 4?"})
        assert reply.status_code == status and reply.json()["field"] == "backend"
        assert "word-overlap (test)" in reply.json()["detail"]
        assert ("Retry-After" in reply.headers) == (status == 503)
        ready = client.get("/readyz")
        assert ready.status_code == 503 and "word-overlap (test)" in ready.json()["error"]
    finally:
        (control / FAIL).unlink()
    assert client.get("/readyz").status_code == 200
    assert ask(client, {"question": "Who directed Film 4?"}).status_code == 200
    assert 'efficientrag_errors_total{kind="backend"}' in client.get("/metrics").text


def test_sigterm_finishes_the_requests_in_flight_then_exits_0(served):
    server, client, control = served
    blocker = hold_one_batch(client, control)
    queued = in_background(client, [{"question": "Who directed Film 5?"}])
    wait_until(lambda: metric(client, "efficientrag_queue_depth") == 1, "the second request to queue")
    server.terminate()

    def refuses() -> bool:
        try:
            httpx.get(server.url + "/healthz", timeout=5)
        except httpx.TransportError:
            return True
        return False

    wait_until(refuses, "the server to stop accepting")
    release(control, blocker, queued)
    assert [blocker[1][0].status_code, queued[1][0].status_code] == [200, 200]
    assert server.wait(timeout=60) == 0
    assert TOKEN not in server.text()
