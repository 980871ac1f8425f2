"""``efficientrag serve`` in a subprocess over a real bm25 index, with real HTTP: both endpoints and
their shapes, replies equal to the library's, every refusal naming its field (and the server still
up after them), health, readiness, metrics, ``RemoteEfficientRAG`` (sync and async) through the
LangChain and LlamaIndex retrievers, and the page at ``/`` in a headless Chromium.

The server batches questions its own way, so its probabilities equal the library's up to float
noise (``numerics`` tests, :mod:`efficientrag.testing.float_noise`); ids, tags and order exactly.
"""

from __future__ import annotations

import asyncio
import shutil
import sys

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from efficientrag.data.corpus import Corpus  # noqa: E402
from efficientrag.models import Labeler  # noqa: E402
from efficientrag.pipeline.config import EfficientRAGConfig  # noqa: E402
from efficientrag.pipeline.efficientrag import EfficientRAG  # noqa: E402
from efficientrag.retrieval.config import RetrieverConfig  # noqa: E402
from efficientrag.retrieval.factory import build_retriever  # noqa: E402
from efficientrag.serve.client import RemoteEfficientRAG, RemoteRequestError  # noqa: E402
from efficientrag.serve.wire import result_to_json  # noqa: E402
from efficientrag.testing.float_noise import assert_same_up_to_float_noise  # noqa: E402
from efficientrag.testing.token_tasks import labeler_rows  # noqa: E402
from efficientrag.training.exit_head import ExitHeadConfig, fit_exit_head  # noqa: E402
from tests.serve.serve_harness import Server, build_tiny_models, write_corpus  # noqa: E402

QUESTION = "Where was the director of Film 3 born?"
QUESTIONS = [QUESTION, "Who directed Film 7?", "Where was Person 2 born?"]
MAX_QUESTIONS, MAX_QUERIES, MAX_BODY = 4, 8, 20_000


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-api")
    models = build_tiny_models(root / "models")
    labeler = Labeler.from_pretrained(models["labeler"], device="cpu")
    fit_exit_head(labeler, labeler_rows(32), ExitHeadConfig(layers=[1], epochs=2)).save(models["labeler"])
    corpus = write_corpus(root / "corpus.jsonl")
    argv = [sys.executable, "-m", "efficientrag.cli", "serve", "--corpus", str(corpus),
            "--work-dir", str(root / "work"), "--labeler", models["labeler"], "--filter", models["filter"],
            "retriever.kind=bm25", "--port", "0", f"serve.max_questions={MAX_QUESTIONS}",
            f"serve.max_queries={MAX_QUERIES}", f"serve.max_body_bytes={MAX_BODY}"]  # fmt: skip
    server = Server(argv, root / "server.log", unset=("EFFICIENTRAG_API_KEY",))
    client = httpx.Client(base_url=server.url, timeout=120)
    # The same loop in this process, over its own copy of the same bm25 index settings.
    retriever = build_retriever(RetrieverConfig(kind="bm25"), Corpus.load(corpus), root / "local-index")
    local = EfficientRAG.from_config(
        retriever, EfficientRAGConfig(labeler=models["labeler"], filter=models["filter"])
    )
    try:
        yield server, client, local
    finally:
        client.close()
        server.kill()


def strip_timings(row: dict) -> dict:
    for hop in row.get("trace", []):
        hop.pop("timings_s")
    row.pop("documents", None)
    return row


@pytest.mark.numerics
def test_v1_retrieve_replies_equal_the_library(served):
    _, client, local = served
    reply = client.post("/v1/retrieve", json={"questions": QUESTIONS, "trace": True})
    assert reply.status_code == 200
    rows = reply.json()["results"]
    expected = [strip_timings(result_to_json(r, trace=True)) for r in local.retrieve_batch(QUESTIONS)]
    assert_same_up_to_float_noise([strip_timings(dict(r)) for r in rows], expected)
    chunk = rows[0]["chunks"][0]
    assert set(chunk) == {"id", "title", "text", "score", "hop", "query"}
    assert chunk["hop"] == 0 and chunk["query"] == QUESTION
    # Without "trace" the reply holds no trace; the page reads dropped hits' texts from "documents".
    one = client.post("/v1/retrieve", json={"question": QUESTION}).json()["results"]
    assert len(one) == 1 and "trace" not in one[0] and one[0]["chunks"] == rows[0]["chunks"]
    assert isinstance(
        client.post("/v1/retrieve", json={"question": QUESTION, "trace": True}).json()["results"][0][
            "documents"
        ],
        dict,
    )


@pytest.mark.numerics
def test_settings_from_the_allow_list_change_the_loop(served):
    _, client, local = served
    settings = {"top_k": 3, "max_hops": 1, "chunk_budget": 2}
    rows = client.post("/v1/retrieve", json={"question": QUESTION, "settings": settings}).json()["results"]
    tuned = EfficientRAG(local.retriever, local.labeler, local.filter, EfficientRAGConfig(**{
        **{k: getattr(local.config, k) for k in ("labeler", "filter")}, **settings}))  # fmt: skip
    assert_same_up_to_float_noise(
        rows[0]["chunks"], result_to_json(tuned.retrieve(QUESTION), trace=False)["chunks"]
    )
    assert len(rows[0]["chunks"]) <= 2


def test_a_request_may_let_the_labelers_pairs_exit_early(served):
    _, client, _ = served
    body = {"question": QUESTION, "trace": True, "settings": {"exit_threshold": 1.0, "max_hops": 1}}
    row = client.post("/v1/retrieve", json=body).json()["results"][0]
    judged = [h for hop in row["trace"] for hits in hop["hits"] for h in hits if "tag" in h]
    assert judged and all(h["exited_at"] == 1 and h["tag"] == "terminate" for h in judged)
    assert row["counters"]["exited_pairs"] == row["counters"]["labeler_pairs"] == len(judged)


def test_search_r1_retrieve_has_their_shape(served):
    _, client, _ = served
    plain = client.post("/retrieve", json={"queries": QUESTIONS[:2], "topk": 3}).json()
    scored = client.post(
        "/retrieve", json={"queries": QUESTIONS[:2], "topk": 3, "return_scores": True}
    ).json()
    assert list(plain) == ["result"] and len(plain["result"]) == 2
    v1 = client.post(
        "/v1/retrieve", json={"questions": QUESTIONS[:2], "settings": {"chunk_budget": 3}}
    ).json()
    for docs, with_scores, row in zip(plain["result"], scored["result"], v1["results"], strict=True):
        assert 0 < len(docs) <= 3
        assert docs == [{"id": c["id"], "contents": f"{c['title']}\n{c['text']}"} for c in row["chunks"]]
        assert with_scores == [
            {"document": d, "score": c["score"]} for d, c in zip(docs, row["chunks"], strict=True)
        ]
    # A Search-R1 client's own parsing: the title is the first line of "contents".
    first = scored["result"][0][0]["document"]["contents"]
    assert first.split("\n")[0] == v1["results"][0]["chunks"][0]["title"]


LONG = " ".join(["word"] * 300)
BAD_REQUESTS = [
    ("malformed JSON", b'{"question": ', 400, "body"),
    ("not an object", b"[1, 2]", 422, "body"),
    ("no question", {}, 422, "question"),
    ("both forms", {"question": "a", "questions": ["b"]}, 422, "question"),
    ("empty question", {"questions": ["Who?", "  "]}, 422, "questions[1]"),
    ("not a string", {"questions": ["Who?", 3]}, 422, "questions[1]"),
    ("over the token limit", {"question": f"Who is {LONG}?"}, 422, "question"),
    ("too many questions", {"questions": ["Who?"] * (MAX_QUESTIONS + 1)}, 422, "questions"),
    ("unknown setting", {"question": "Who?", "settings": {"topk": 3}}, 422, "settings.topk"),
    ("a model folder", {"question": "Who?", "settings": {"labeler": "/tmp"}}, 422, "settings.labeler"),
    (
        "a backend",
        {"question": "Who?", "settings": {"retriever": {"kind": "milvus"}}},
        422,
        "settings.retriever",
    ),
    ("a file", {"question": "Who?", "index_dir": "/etc"}, 422, "index_dir"),
    ("a wrong type", {"question": "Who?", "settings": {"top_k": "5"}}, 422, "settings.top_k"),
    ("over a cap", {"question": "Who?", "settings": {"top_k": 10_000}}, 422, "settings.top_k"),
    ("inconsistent settings", {"question": "Who?", "settings": {"floor_k": 5, "top_k": 2}}, 422, "settings"),
    (
        "an exit threshold over 1",
        {"question": "Who?", "settings": {"exit_threshold": 1.5}},
        422,
        "settings.exit_threshold",
    ),
    ("body over the limit", {"question": "Who? " + "x" * MAX_BODY}, 413, "body"),
]


@pytest.mark.parametrize(("case", "body", "status", "field"), BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
def test_every_bad_request_is_a_4xx_naming_its_field(served, case, body, status, field):
    _, client, _ = served
    if isinstance(body, bytes):
        reply = client.post("/v1/retrieve", content=body, headers={"Content-Type": "application/json"})
    else:
        reply = client.post("/v1/retrieve", json=body)
    assert (reply.status_code, reply.json()["field"]) == (status, field), reply.text
    assert reply.json()["detail"].startswith(f"{field}: ")


def test_the_search_r1_endpoint_refuses_the_same_way_and_the_server_stays_up(served):
    _, client, _ = served
    for body, field in [({"queries": []}, "queries"), ({"queries": ["a"] * (MAX_QUERIES + 1)}, "queries"),
                        ({"queries": ["a", 3]}, "queries[1]"), ({"queries": ["a"], "topk": 0}, "topk"),
                        ({"query": "a"}, "queries")]:  # fmt: skip
        reply = client.post("/retrieve", json=body)
        assert reply.status_code == 422 and reply.json()["field"] == field, reply.text
    form = client.post(
        "/retrieve", content=b"queries=a", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert form.status_code == 415 and form.json()["field"] == "content-type"
    assert client.get("/healthz").json() == {"status": "alive"}
    assert client.post("/retrieve", json={"queries": ["Who directed Film 1?"]}).status_code == 200


def test_an_empty_search_r1_query_gets_an_empty_list_in_its_place(served):
    """Search-R1 sends '' for an empty <search></search>; the rest of the rollout's batch is answered."""
    _, client, _ = served
    reply = client.post("/retrieve", json={"queries": ["", QUESTION, "  ", QUESTIONS[1]], "topk": 3})
    assert reply.status_code == 200, reply.text
    result = reply.json()["result"]
    alone = client.post("/retrieve", json={"queries": [QUESTION, QUESTIONS[1]], "topk": 3}).json()["result"]
    assert result[0] == [] and result[2] == [] and [result[1], result[3]] == alone
    assert all(alone)


def test_health_readiness_metrics_and_schema(served):
    server, client, _ = served
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["backend"] == "bm25"
    client.post("/v1/retrieve", json={"question": ""})
    text = client.get("/metrics").text
    for name in ('efficientrag_requests_total{endpoint="/v1/retrieve",status="200"}',
                 "efficientrag_request_seconds_bucket", "efficientrag_batch_size_bucket",
                 "efficientrag_queue_depth", 'efficientrag_errors_total{kind="invalid_request"}'):  # fmt: skip
        assert name in text
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/retrieve", "/retrieve", "/healthz", "/readyz", "/metrics"} <= set(paths)
    assert "LoopSettings" in client.get("/openapi.json").text and client.get("/docs").status_code == 200
    # The schema shows the ranges the loop's config declares (and checks, once, per request).
    loop = client.get("/openapi.json").json()["components"]["schemas"]["LoopSettings"]["properties"]
    assert loop["top_k"]["minimum"] == 1 and loop["top_k"]["maximum"] == 100  # serve.max_top_k
    assert loop["max_hops"]["maximum"] == 8 and loop["pair_budget"]["minimum"] == 1
    assert loop["rank_weight"]["minimum"] == 0
    models = client.get("/openapi.json").json()["components"]["schemas"]
    assert models["RetrieveRequest"]["properties"]["questions"]["maxItems"] == MAX_QUESTIONS
    assert models["SearchR1Request"]["properties"]["queries"]["maxItems"] == MAX_QUERIES
    assert (loop["tag_threshold"]["minimum"], loop["tag_threshold"]["maximum"]) == (0, 1)
    assert loop["floor_k"]["minimum"] == 0
    # Without EFFICIENTRAG_API_KEY the API is open (as every test here shows), on loopback only.
    assert "listening on http://127.0.0.1:" in server.text()


def loop_view(results) -> list[dict]:
    """What the loop decided for each question (chunks, scores, every hop's hits and next queries),
    without the timings no two runs share."""
    return [
        {"chunks": r.chunks, "scores": r.scores, "hits": [h.hits for h in r.trace],
         "next_queries": [h.next_queries for h in r.trace]}
        for r in results
    ]  # fmt: skip


@pytest.mark.numerics
def test_remote_client_returns_the_library_results_sync_and_async(served):
    server, _, local = served
    expected = local.retrieve_batch(QUESTIONS)
    with RemoteEfficientRAG(server.url, batch_size=2) as remote:  # two requests for three questions
        got = remote.retrieve_batch(QUESTIONS)
        single = remote.retrieve(QUESTIONS[1])

        async def both():
            try:
                return await remote.aretrieve_batch(QUESTIONS), await remote.aretrieve(QUESTIONS[1])
            finally:
                await remote.aclose()

        agot, asingle = asyncio.run(both())
        for results in (got, agot):  # batched 2 + 1 there, 3 here: equal up to float noise
            assert_same_up_to_float_noise(loop_view(results), loop_view(expected))
        assert single.chunks == asingle.chunks == expected[1].chunks
        with pytest.raises(ValueError, match=r"questions\[1\]: the question is empty"):
            remote.retrieve_batch(["Who?", " "])
    bad = RemoteEfficientRAG(server.url, settings={"labeler": "/tmp"})
    with pytest.raises(RemoteRequestError, match="settings.labeler: unknown setting") as err:
        bad.retrieve("Who directed Film 1?")
    assert err.value.status == 422 and err.value.field == "settings.labeler"


@pytest.mark.numerics
def test_the_langchain_retriever_takes_the_remote_client(served):
    pytest.importorskip("langchain_core")
    from efficientrag.pipeline.langchain import EfficientRAGRetriever

    server, _, local = served
    remote = RemoteEfficientRAG(server.url)
    here, there = EfficientRAGRetriever(rag=local), EfficientRAGRetriever(rag=remote)
    assert_same_up_to_float_noise(there.invoke(QUESTION), here.invoke(QUESTION))
    assert_same_up_to_float_noise(there.batch(QUESTIONS), here.batch(QUESTIONS))
    assert_same_up_to_float_noise(asyncio.run(there.abatch(QUESTIONS)), here.batch(QUESTIONS))
    assert_same_up_to_float_noise(asyncio.run(there.ainvoke(QUESTION)), here.invoke(QUESTION))
    with pytest.raises(Exception, match="rag"):
        EfficientRAGRetriever(rag=object())


@pytest.mark.numerics
def test_the_llamaindex_retriever_takes_the_remote_client(served):
    pytest.importorskip("llama_index.core")
    from efficientrag.pipeline.llamaindex import EfficientRAGRetriever

    server, _, local = served
    here, there = EfficientRAGRetriever(local), EfficientRAGRetriever(RemoteEfficientRAG(server.url))

    def view(nodes):
        return [(n.node.node_id, n.node.text, n.score, n.node.metadata) for n in nodes]

    assert_same_up_to_float_noise(view(there.retrieve(QUESTION)), view(here.retrieve(QUESTION)))
    assert_same_up_to_float_noise(
        [view(n) for n in there.retrieve_batch(QUESTIONS)], [view(n) for n in here.retrieve_batch(QUESTIONS)]
    )
    assert_same_up_to_float_noise(view(asyncio.run(there.aretrieve(QUESTION))), view(here.retrieve(QUESTION)))
    with pytest.raises(TypeError, match="rag must have retrieve"):
        EfficientRAGRetriever(object())


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
def test_the_page_draws_every_hop_in_a_real_browser(served):
    if CHROMIUM is None:
        pytest.skip("no system Chromium (Debian: apt-get install chromium)")
    playwright = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (the dev extra)"
    )
    server, client, _ = served
    expected = client.post("/v1/retrieve", json={"question": QUESTION, "trace": True}).json()["results"][0]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            external = []
            page.on(
                "request",
                lambda r: (
                    None
                    if r.url.startswith(server.url) or r.url.startswith("blob:")
                    else external.append(r.url)
                ),
            )
            page.goto(server.url + "/")
            page.fill("#question", QUESTION)
            page.click("#go")
            page.wait_for_selector("#json-link", timeout=60_000)
            drawn = page.evaluate("""() => [...document.querySelectorAll('section.hop')].map(s => ({
                hop: Number(s.dataset.hop),
                queries: [...s.querySelectorAll('.query-text')].map(q => q.textContent),
                rows: [...s.querySelectorAll('tr.hit')].map(r => [r.dataset.id, r.className, r.querySelector('.prob').textContent]),
                marks: [...s.querySelectorAll('tr.hit.kept mark')].map(m => m.textContent),
                next: [...s.querySelectorAll('.next-query')].map(q => q.textContent),
                timings: s.querySelector('.timings').textContent,
            }))""")
            kept = page.eval_on_selector_all("li.chunk", "els => els.map(e => e.dataset.id)")
            href = page.get_attribute("#json-link", "href")
            from_link = page.evaluate(
                "async (u) => (await (await fetch(u)).json()).results[0].chunks.map(c => c.id)", href
            )
        finally:
            browser.close()
    assert len(drawn) == len(expected["trace"]) > 0
    for hop, want in zip(drawn, expected["trace"], strict=True):
        assert hop["hop"] == want["hop"] and hop["queries"] == want["queries"]
        assert hop["next"] == want["next_queries"] and "Labeler" in hop["timings"]
        rows = [r for q in want["hits"] for r in q]
        assert [r[0] for r in hop["rows"]] == [r["id"] for r in rows]
        for (_, cls, prob), row in zip(hop["rows"], rows, strict=True):
            assert ("kept" in cls) == (row.get("tag") == "continue" or row.get("floor", False))
            assert prob == ("–" if row.get("continue_prob") is None else f"{row['continue_prob']:.3f}")
        useful = [w for r in rows if r.get("tag") == "continue" for w in r["labeled_words"]]
        assert hop["marks"] == useful
    assert drawn[0]["queries"] == [QUESTION]
    assert kept == from_link == [c["id"] for c in expected["chunks"]]
    assert external == []


def test_serve_stops_before_the_port_opens_on_bad_input(tmp_path, capsys, monkeypatch):
    from efficientrag.cli import main
    from efficientrag.serve.runner import bind

    corpus = write_corpus(tmp_path / "corpus.jsonl")
    common = ["serve", "--corpus", str(corpus), "--work-dir", str(tmp_path / "w"), "retriever.kind=bm25"]
    code = main([*common, "--labeler", str(tmp_path / "no-such-labeler"), "--filter", str(tmp_path / "f")])
    assert code == 2 and "efficientrag.labeler" in capsys.readouterr().err
    monkeypatch.setenv("EFFICIENTRAG_API_KEY", " ")
    assert main([*common, "--labeler", "x", "--filter", "y"]) == 2
    assert "EFFICIENTRAG_API_KEY is set but empty" in capsys.readouterr().err
    taken = bind("127.0.0.1", 0)
    try:
        with pytest.raises(ValueError, match=rf"cannot listen on 127.0.0.1:{taken.getsockname()[1]}"):
            bind("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()
