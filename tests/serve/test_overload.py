"""The service under an RL trainer's load (issue 50), on a real uvicorn server in a subprocess over
a backend the tests can hold: a Search-R1 rollout's batch read by Search-R1's client rules, no
work for a caller that left (queued or between hops), and admission by deadline (an impossible
deadline, a burst beyond capacity).

Every wait here is for a state of the server (a queue depth, a counter), never a time; no test
asserts a duration. The backend writes down every query it is asked (``searched``), which is how a
test knows that a question was never computed.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from tests.serve.serve_harness import (  # noqa: E402
    HOLD,
    Server,
    build_tiny_models,
    corpus_rows,
    harness_client,
    labeled_metric,
    metric,
    open_request,
    searched,
    wait_until,
)

TOKEN = "overload-test-token"
MAX_BATCH = 32
# Loop settings under which every hit says Continue and the Filter keeps every word: each question
# opens a second hop, so a batch always has a hop boundary after its first.
HOPPING = {"tag_threshold": 0.0, "token_threshold": 0.0, "filter_threshold": 0.0, "max_hops": 3,
           "chunk_budget": 100}  # fmt: skip


def flashrag_rows() -> list[dict[str, str]]:
    """The harness corpus as a wiki-18-style FlashRAG corpus: ``{"id", "contents"}``, quoted titles."""
    return [{"id": r["id"], "contents": f'"{r["title"]}"\n{r["text"]}'} for r in corpus_rows()]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-overload")
    models = build_tiny_models(root / "models")
    control = root / "control"
    control.mkdir()
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in flashrag_rows()), encoding="utf-8")
    argv = [sys.executable, str(Path(__file__).with_name("serve_harness.py")), "--corpus", str(corpus),
            "--labeler", models["labeler"], "--filter", models["filter"], "--control", str(control),
            "--floor-k", "2", "--top-k", "3", f"max_batch={MAX_BATCH}", "max_wait_ms=20", "max_queue=2048",
            "max_queries=1024", "deadline_s=600", "access_log=false"]  # fmt: skip
    server = Server(argv, root / "server.log", env={"EFFICIENTRAG_API_KEY": TOKEN})
    with harness_client(server, control, TOKEN) as client:
        # Full batches measured (the first, cold one among them), so the server knows its rate before
        # any test asks it to judge a deadline.
        for _ in range(2):
            warm = client.post("/v1/retrieve", json={"questions": ["Who directed Film 0?"] * MAX_BATCH})
            assert warm.status_code == 200, warm.text
        yield server, client, control


def in_background(send, n: int) -> tuple[list[threading.Thread], list]:
    replies: list = [None] * n

    def run(i: int) -> None:
        replies[i] = send(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads, replies


def join(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join(timeout=120)


def hold_one_batch(client: httpx.Client, control: Path) -> tuple[list[threading.Thread], list]:
    """A one-question batch running and held inside the backend's search."""
    (control / HOLD).touch()
    blocker = in_background(
        lambda _: client.post("/v1/retrieve", json={"question": "Who directed Film 9?"}), 1
    )
    wait_until(lambda: metric(client, "efficientrag_in_flight") == 1, "the held batch to start")
    return blocker


# --------------------------------------------------------------------------- Search-R1's client


def search_r1_batch_search(url: str, queries: list[str], topk: int = 3) -> list[list[dict]]:
    """What Search-R1's rollout does for its batch: one POST of every active rollout's query (an
    empty <search></search> sends ''), scores asked, then ``["result"]`` of the reply."""
    payload = {"queries": queries, "topk": topk, "return_scores": True}
    reply = httpx.post(
        f"{url}/retrieve", json=payload, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300
    )
    assert reply.status_code == 200, reply.text  # Search-R1 itself would fail on ["result"] here
    return reply.json()["result"]


def search_r1_passages(docs: list[dict]) -> str:
    """Search-R1's reading of one query's documents: the title is the first line of ``contents``,
    the text the lines after it, one ``Doc i(Title: ...) ...`` line per document."""
    lines = []
    for i, doc in enumerate(docs, start=1):
        title, _, text = doc["document"]["contents"].partition("\n")
        lines.append(f"Doc {i}(Title: {title}) {text}\n")
    return "".join(lines)


def test_search_r1_client_reads_a_rollouts_batch_with_empty_queries_and_quoted_titles(served):
    server, client, _ = served
    empty = {3, 100, 257, 511}
    queries = ["" if i in empty else f"Where was the director of Film {i % 20} born?" for i in range(512)]
    batches = metric(client, "efficientrag_batch_size_count")
    result = search_r1_batch_search(server.url, queries)
    assert len(result) == 512
    rows = {r["id"]: r["contents"] for r in flashrag_rows()}
    for i, docs in enumerate(result):
        if i in empty:
            assert docs == [] and search_r1_passages(docs) == ""
            continue
        assert 0 < len(docs) <= 3
        for doc in docs:
            assert doc["document"]["contents"] == rows[doc["document"]["id"]]  # the row's own, quotes and all
        first = search_r1_passages(docs).splitlines()[0]
        assert first.startswith('Doc 1(Title: "') and '") ' in first
    # 508 questions under one deadline, in the batcher's own batches of at most MAX_BATCH.
    ran = metric(client, "efficientrag_batch_size_count") - batches
    assert ran >= 508 / MAX_BATCH
    assert labeled_metric(client, "efficientrag_batch_size_bucket", le=f"{MAX_BATCH}.0") == metric(
        client, "efficientrag_batch_size_count"
    )


# --------------------------------------------------------------------------- callers that left


def test_a_client_that_disconnects_while_queued_is_never_computed(served):
    server, client, control = served
    question = "Who directed Film 4242, asked by a client that leaves?"
    gone = labeled_metric(client, "efficientrag_abandoned_total", stage="queued", reason="gone")
    blocker = hold_one_batch(client, control)
    sock = open_request(server.url, "/v1/retrieve", {"question": question}, TOKEN)
    wait_until(lambda: metric(client, "efficientrag_queue_depth") == 1, "the request to queue")
    sock.close()
    wait_until(
        lambda: (
            labeled_metric(client, "efficientrag_abandoned_total", stage="queued", reason="gone") == gone + 1
        ),
        "the server to drop it",
    )
    assert metric(client, "efficientrag_queue_depth") == 0
    batches = metric(client, "efficientrag_batch_size_count")
    (control / HOLD).unlink()
    join(blocker[0])
    assert blocker[1][0].status_code == 200
    assert question not in searched(control)
    assert metric(client, "efficientrag_batch_size_count") == batches  # no batch formed for it


def test_a_batch_whose_callers_all_left_stops_at_the_next_hop(served):
    server, client, control = served
    question = "Who directed Film 777, asked by a client that leaves mid-batch?"
    body = {"question": question, "settings": HOPPING, "trace": True}
    asked = client.post("/v1/retrieve", json=body).json()["results"][0]
    assert len(asked["trace"]) >= 2  # with a caller there, this batch goes on to a second hop
    stopped = labeled_metric(client, "efficientrag_abandoned_total", stage="hop", reason="gone")
    disconnects = metric(client, "efficientrag_disconnects_total")
    (control / HOLD).touch()
    before = len(searched(control))
    sock = open_request(server.url, "/v1/retrieve", body, TOKEN)
    wait_until(lambda: metric(client, "efficientrag_in_flight") == 1, "its batch to start")
    wait_until(lambda: len(searched(control)) == before + 1, "its first hop's search")
    sock.close()
    wait_until(lambda: metric(client, "efficientrag_disconnects_total") == disconnects + 1, "the disconnect")
    (control / HOLD).unlink()
    wait_until(
        lambda: (
            labeled_metric(client, "efficientrag_abandoned_total", stage="hop", reason="gone") == stopped + 1
        ),
        "the batch to stop",
    )
    assert searched(control)[before:] == [question]  # hop 0 only: no second search
    assert labeled_metric(client, "efficientrag_requests_total", endpoint="/v1/retrieve", status="499") >= 1


# --------------------------------------------------------------------------- admission by deadline


def test_an_impossible_deadline_is_refused_at_once_and_never_computed(served):
    _, client, control = served
    batches = metric(client, "efficientrag_batch_size_count")
    questions = [f"Who directed Film {i}, asked in no time?" for i in range(5)]
    reply = client.post("/v1/retrieve", json={"questions": questions, "deadline_ms": 1})
    assert reply.status_code == 503 and reply.json()["field"] == "deadline_ms", reply.text
    assert "Retry-After" not in reply.headers  # waiting cannot help; a longer deadline can
    header = client.post(
        "/retrieve", json={"queries": questions}, headers={"X-Envoy-Expected-Rq-Timeout-Ms": "1"}
    )
    assert header.status_code == 503 and header.json()["field"] == "deadline_ms", header.text
    bad = client.post(
        "/retrieve", json={"queries": questions}, headers={"X-Envoy-Expected-Rq-Timeout-Ms": "soon"}
    )
    assert bad.status_code == 400 and bad.json()["field"] == "x-envoy-expected-rq-timeout-ms"
    assert metric(client, "efficientrag_batch_size_count") == batches
    assert not set(questions) & set(searched(control))


def test_a_burst_beyond_capacity_gets_503s_with_retry_after_and_no_other_5xx(served):
    """While one batch is held (so the measured rate cannot move), a rollout's batch fills the queue;
    a burst then asks with a deadline that queue cannot meet, and another part of it with time
    enough. Every refusal is a 503 with Retry-After, sent while the batch is still held (at once,
    not after waiting); everything admitted is answered once the batch is let go; no other 5xx."""
    server, client, control = served
    blocker = hold_one_batch(client, control)
    rate = metric(client, "efficientrag_rate")
    queued = [f"Where was Person {i % 20} born?" for i in range(200)]
    rollout = in_background(lambda _: client.post("/retrieve", json={"queries": queued}), 1)
    wait_until(lambda: metric(client, "efficientrag_queue_depth") == len(queued), "the rollout to queue")
    # Half the queue's time: room for one question alone, none behind the rollout.
    tight_ms = int(1000 * (len(queued) / 2) / rate)
    assert 1000 * (0.02 + 1 / rate) < tight_ms
    tight, generous = 24, 8

    def ask(i: int, headers: dict[str, str]) -> httpx.Response:
        return client.post("/v1/retrieve", json={"question": f"Who directed Film {i % 20}?"}, headers=headers)

    late = in_background(lambda i: ask(i, {"X-Envoy-Expected-Rq-Timeout-Ms": str(tight_ms)}), tight)
    patient = in_background(lambda i: ask(i, {}), generous)
    join(late[0])  # the refusals come back while the batch is still held: at once, not after waiting
    assert (control / HOLD).exists() and metric(client, "efficientrag_in_flight") == 1
    assert [r.status_code for r in late[1]] == [503] * tight
    assert all(r.json()["field"] == "queue" and int(r.headers["Retry-After"]) >= 1 for r in late[1])
    wait_until(
        lambda: metric(client, "efficientrag_queue_depth") == len(queued) + generous,
        "the patient ones to queue",
    )
    (control / HOLD).unlink()
    join(blocker[0] + rollout[0] + patient[0])
    answered = blocker[1] + rollout[1] + patient[1]
    assert [r.status_code for r in answered] == [200] * len(answered)  # no 504, no other 5xx
    assert len(rollout[1][0].json()["result"]) == len(queued)
