"""AsyncLLMClient against the fake server with the real `openai` client: retries, Retry-After,
errors, truncation, concurrency, cache, secrecy of the key, logprobs and usage accounting."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import pytest

from efficientrag.config import load_config
from efficientrag.llm import (
    AsyncLLMClient,
    EndpointUnreachableError,
    LLMAuthError,
    LLMClient,
    LLMConfig,
    LLMConfigError,
    LLMRequestError,
    ModelPrice,
    ResponseCache,
    RetriesExhaustedError,
    TokenLogprob,
    TruncatedOutputError,
    parse_retry_after,
)
from efficientrag.llm.retry import UNREACHABLE_RETRY_DELAY_S
from efficientrag.testing.fake_completions import ScriptedReply, fake_logprob, tokenize
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.fake_responders import queue_responder

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"
MSG = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


class RecordingSleep:
    """Stands in for asyncio.sleep: records requested delays, never waits."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


def make_cfg(srv: FakeOpenAIServer, **kw) -> LLMConfig:
    base = {
        "base_url": srv.base_url,
        "model": "fake-model",
        "backoff_base": 0.001,
        "backoff_max": 0.01,
        "timeout": 5.0,
    }
    base.update(kw)
    return LLMConfig(**base)


def run_calls(cfg: LLMConfig, calls, *, sleep=None, cache=None):
    """Run ``calls(client)`` (an async function) on a fresh client; returns (result, client)."""

    async def main():
        client = AsyncLLMClient(cfg, sleep=sleep or RecordingSleep(), cache=cache)
        try:
            return await calls(client), client
        finally:
            await client.aclose()

    return asyncio.run(main())


# -- happy path and retries -----------------------------------------------------------------------


def test_chat_returns_text_usage_and_not_cached():
    with FakeOpenAIServer(lambda r: "Paris") as srv:
        resp, client = run_calls(make_cfg(srv), lambda c: c.chat(MSG))
    assert resp.text == "Paris"
    assert resp.finish_reason == "stop"
    assert resp.cached is False
    assert resp.usage.prompt_tokens == len(tokenize(MSG[0]["content"]))
    assert resp.usage.completion_tokens == 1
    assert resp.logprobs is None
    body = srv.request_bodies("chat")[0]
    assert body["temperature"] == 0.0 and body["model"] == "fake-model"
    assert "seed" not in body and "max_tokens" not in body


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("500", "server_error"),
        ("502", "server_error"),
        ("503", "server_error"),
        ("429", "rate_limit"),
        ("malformed", "malformed"),
        ("slow", "timeout"),
    ],
)
def test_each_transient_fault_is_retried_then_succeeds(fault, kind):
    with FakeOpenAIServer(lambda r: "Paris", faults=[fault], retry_after=0.01, slow_seconds=3.0) as srv:
        sleep = RecordingSleep()
        resp, client = run_calls(make_cfg(srv, timeout=0.3), lambda c: c.chat(MSG, stage="s"), sleep=sleep)
        assert srv.stats()["requests"] == {"chat": 2}
    assert resp.text == "Paris"
    stage = client.usage.stage("s")
    assert stage.retries == 1
    assert dict(stage.errors) == {kind: 1}
    assert stage.calls == 1 and stage.failed == 0
    assert len(sleep.delays) == 1


def test_completions_fault_retried_too():
    with FakeOpenAIServer(lambda r: "ok", faults=["503", "malformed"]) as srv:
        resp, client = run_calls(make_cfg(srv), lambda c: c.complete("x", max_tokens=5))
    assert resp.text == "ok"
    assert client.usage.total().retries == 2


@pytest.mark.parametrize("header", ["retry-after", "retry-after-ms"])
def test_retry_after_is_honoured(header):
    with FakeOpenAIServer(faults=["429", "429"], retry_after=2.5, retry_after_header=header) as srv:
        sleep = RecordingSleep()
        run_calls(make_cfg(srv, backoff_base=0.001, backoff_max=0.002), lambda c: c.chat(MSG), sleep=sleep)
    assert sleep.delays == [2.5, 2.5]


def test_retry_after_is_capped_by_config():
    with FakeOpenAIServer(faults=["429"], retry_after=500) as srv:
        sleep = RecordingSleep()
        run_calls(make_cfg(srv, max_retry_after=7.0), lambda c: c.chat(MSG), sleep=sleep)
    assert sleep.delays == [7.0]


def test_backoff_grows_exponentially_with_jitter_bounds():
    with FakeOpenAIServer(faults=["500"] * 4) as srv:
        sleep = RecordingSleep()
        run_calls(make_cfg(srv, backoff_base=1.0, backoff_max=5.0), lambda c: c.chat(MSG), sleep=sleep)
    assert len(sleep.delays) == 4
    for attempt, delay in enumerate(sleep.delays):
        ceiling = min(5.0, 2.0**attempt)
        assert ceiling / 2 <= delay <= ceiling


def test_retries_exhausted_raises_with_kind():
    with FakeOpenAIServer(faults=["502"] * 10) as srv:
        with pytest.raises(RetriesExhaustedError) as info:
            run_calls(make_cfg(srv, max_retries=2), lambda c: c.chat(MSG, stage="x"))
        assert srv.total_requests == 3
    assert info.value.kind == "server_error"
    assert info.value.attempts == 3
    assert "502" in str(info.value) or "server_error" in str(info.value)


def test_non_retryable_4xx_raises_immediately():
    with FakeOpenAIServer(faults=["400"]) as srv:
        sleep = RecordingSleep()
        with pytest.raises(LLMRequestError) as info:
            run_calls(make_cfg(srv), lambda c: c.chat(MSG), sleep=sleep)
        assert srv.total_requests == 1
    assert info.value.status == 400
    assert info.value.kind == "bad_request"
    assert "fake bad request" in str(info.value)
    assert sleep.delays == []


def test_401_names_the_env_var_and_never_the_key():
    with FakeOpenAIServer(require_api_key="the-right-key") as srv:
        with pytest.raises(LLMAuthError) as info:
            run_calls(make_cfg(srv, api_key_env="MY_LLM_KEY", api_key=SECRET), lambda c: c.chat(MSG))
        assert srv.total_requests == 1
    message = str(info.value)
    assert "MY_LLM_KEY" in message
    assert SECRET not in message


def test_truncated_reply_raises_unless_allowed():
    with FakeOpenAIServer(lambda r: "one two three four", faults=["truncated"]) as srv:
        with pytest.raises(TruncatedOutputError) as info:
            run_calls(make_cfg(srv), lambda c: c.chat(MSG))
        assert srv.total_requests == 1
    assert info.value.response.text == "one two"
    assert info.value.response.finish_reason == "length"

    with FakeOpenAIServer(lambda r: "one two three four") as srv:
        resp, client = run_calls(make_cfg(srv), lambda c: c.complete("p", max_tokens=3, allow_truncated=True))
    assert resp.text == "one two three"
    assert resp.truncated
    assert client.usage.total().calls == 1


def test_truncated_reply_is_billed_and_counted_as_failure():
    with FakeOpenAIServer(lambda r: ScriptedReply("a b c", prompt_tokens=10, completion_tokens=3)) as srv:
        cfg = make_cfg(srv, prices={"fake-model": ModelPrice(prompt=1.0, completion=2.0)})

        async def calls(c):
            with pytest.raises(TruncatedOutputError):
                await c.chat(MSG, max_tokens=1, stage="t")
            return c.usage.stage("t")

        stage, _ = run_calls(cfg, calls)
    assert stage.failed == 1 and stage.calls == 0
    assert stage.errors["truncated"] == 1
    assert stage.prompt_tokens == 10 and stage.completion_tokens == 3
    assert stage.cost_usd == pytest.approx((10 * 1.0 + 3 * 2.0) / 1e6, rel=1e-12)


# -- concurrency ----------------------------------------------------------------------------------


def test_concurrency_limit_is_respected():
    limit = 4
    # Requests wait until `limit` of them are inside the server together, so reaching the limit is
    # certain (not a matter of timing); the semaphore guarantees it is never exceeded.
    barrier = threading.Barrier(limit, timeout=20)

    def responder(request):
        barrier.wait()
        return "ok"

    with FakeOpenAIServer(responder) as srv:

        async def calls(c):
            msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(5 * limit)]
            return await asyncio.gather(*(c.chat(m) for m in msgs))

        results, _ = run_calls(make_cfg(srv, concurrency=limit, timeout=30), calls)
        stats = srv.stats()
    assert len(results) == 5 * limit
    assert stats["max_in_flight"] == limit


# -- cache ----------------------------------------------------------------------------------------


def _batch(c, **kw):
    async def go():
        out = []
        out.append(await c.chat(MSG, **kw))
        out.append(await c.chat(MSG, logprobs=True, top_logprobs=2, **kw))
        out.append(await c.complete("Q: x\nA:", logprobs=1, max_tokens=8, **kw))
        return out

    return go()


def test_second_run_with_cache_makes_no_http_requests(tmp_path):
    with FakeOpenAIServer(lambda r: "Paris is the capital") as srv:
        cfg = make_cfg(srv, cache_dir=str(tmp_path / "cache"))
        first, c1 = run_calls(cfg, _batch)
        assert srv.total_requests == 3
        srv.reset_stats()
        second, c2 = run_calls(cfg, _batch)
        assert srv.total_requests == 0
        assert srv.request_bodies() == []
    assert [r.cached for r in first] == [False] * 3
    assert [r.cached for r in second] == [True] * 3
    for a, b in zip(first, second, strict=True):
        assert a.to_dict() == b.to_dict()
    assert second[1].logprobs == first[1].logprobs and first[1].logprobs
    total = c2.usage.total()
    assert total.calls == 3 and total.cached == 3
    assert total.cost_usd == 0.0 and total.prompt_tokens == 0
    assert total.cached_prompt_tokens == c1.usage.total().prompt_tokens


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.7},
        {"max_tokens": 5},
        {"stop": ["\n"]},
        {"top_p": 0.5},
        {"extra_body": {"top_k": 3}},
        {"logprobs": True},
    ],
)
def test_changing_a_sampling_param_misses_the_cache(tmp_path, change):
    with FakeOpenAIServer(lambda r: "Paris") as srv:
        cfg = make_cfg(srv, cache_dir=str(tmp_path))

        async def calls(c):
            await c.chat(MSG)
            again = await c.chat(MSG)
            changed = await c.chat(MSG, **change)
            return again, changed

        (again, changed), _ = run_calls(cfg, calls)
        assert srv.total_requests == 2
    assert again.cached and not changed.cached


def test_config_seed_and_model_are_part_of_the_key(tmp_path):
    with FakeOpenAIServer(lambda r: "Paris") as srv:
        run_calls(make_cfg(srv, cache_dir=str(tmp_path)), lambda c: c.chat(MSG))
        run_calls(make_cfg(srv, cache_dir=str(tmp_path), seed=1), lambda c: c.chat(MSG))
        run_calls(make_cfg(srv, cache_dir=str(tmp_path), model="other"), lambda c: c.chat(MSG))
        run_calls(make_cfg(srv, cache_dir=str(tmp_path), temperature=0), lambda c: c.chat(MSG))
        assert srv.total_requests == 3
    assert srv.request_bodies()[1]["seed"] == 1


def test_failures_and_rejected_truncations_are_not_cached(tmp_path):
    with FakeOpenAIServer(lambda r: "a b c d", faults=["truncated", "400"]) as srv:
        cfg = make_cfg(srv, cache_dir=str(tmp_path))

        async def calls(c):
            with pytest.raises(TruncatedOutputError):
                await c.chat(MSG)
            with pytest.raises(LLMRequestError):
                await c.chat(MSG)
            return await c.chat(MSG)

        resp, client = run_calls(cfg, calls)
        assert srv.total_requests == 3
    assert resp.text == "a b c d" and not resp.cached
    with ResponseCache(tmp_path) as cache:
        assert len(cache) == 1


def test_allowed_truncation_is_cached_and_still_checked_on_hit(tmp_path):
    with FakeOpenAIServer(lambda r: "a b c d") as srv:
        cfg = make_cfg(srv, cache_dir=str(tmp_path))

        async def calls(c):
            first = await c.chat(MSG, max_tokens=2, allow_truncated=True)
            with pytest.raises(TruncatedOutputError):
                await c.chat(MSG, max_tokens=2)
            return first

        first, _ = run_calls(cfg, calls)
        assert srv.total_requests == 1
    assert first.text == "a b"


# -- the key stays secret -------------------------------------------------------------------------


def test_api_key_never_in_cache_logs_or_reprs(tmp_path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    cache_dir = tmp_path / "cache"
    with FakeOpenAIServer(lambda r: "Paris", faults=["429", "500", "malformed"], retry_after=0.001) as srv:
        cfg = make_cfg(srv, cache_dir=str(cache_dir))
        run_calls(cfg, _batch)
        srv.require_api_key = "something-else"
        with pytest.raises(LLMAuthError) as info:
            run_calls(make_cfg(srv, model="m2"), lambda c: c.chat(MSG))
        cfg_with_field = make_cfg(srv, api_key=SECRET)
        client_repr = repr(AsyncLLMClient(cfg_with_field))
    secret = SECRET.encode()
    files = list(cache_dir.iterdir())
    assert files
    for path in files:
        assert secret not in path.read_bytes(), path
    assert caplog.records  # the retries were logged
    assert SECRET not in caplog.text
    out = capsys.readouterr()
    assert SECRET not in out.out and SECRET not in out.err
    assert SECRET not in repr(cfg_with_field) and SECRET not in str(cfg_with_field)
    assert SECRET not in client_repr
    assert SECRET not in str(cfg_with_field.to_public_dict())
    assert "api_key" not in cfg_with_field.to_public_dict()
    assert SECRET not in str(info.value)


def test_local_server_without_key_uses_dummy_and_openai_without_key_fails(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with FakeOpenAIServer(lambda r: "ok") as srv:
        resp, _ = run_calls(make_cfg(srv), lambda c: c.chat(MSG))
    assert resp.text == "ok"
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        AsyncLLMClient(LLMConfig(model="gpt-4o-mini"))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert LLMConfig(model="x").resolved_base_url() == "http://127.0.0.1:9/v1"
    assert AsyncLLMClient(LLMConfig(model="x")).base_url == "http://127.0.0.1:9/v1"


def test_bad_config_and_arguments_fail_early():
    with pytest.raises(LLMConfigError, match="model"):
        AsyncLLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(ValueError, match="concurrency"):
        LLMConfig(model="m", concurrency=0)
    client = AsyncLLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    with pytest.raises(LLMConfigError, match="messages"):
        asyncio.run(client.chat("just a string"))
    with pytest.raises(LLMConfigError, match=r"messages\[0\]"):
        asyncio.run(client.chat([{"content": "no role"}]))


# -- logprobs and usage ---------------------------------------------------------------------------


def test_chat_and_completion_logprobs_parsed():
    scripted = ScriptedReply("Paris is", token_logprobs=[("Paris", -0.25), (" is", -1.5)])
    with FakeOpenAIServer(queue_responder([scripted, "Rome was built"])) as srv:

        async def calls(c):
            chat = await c.chat(MSG, logprobs=True, top_logprobs=2)
            comp = await c.complete("Q:", logprobs=3, max_tokens=10)
            return chat, comp

        (chat, comp), _ = run_calls(make_cfg(srv), calls)
    assert chat.logprobs == [
        TokenLogprob("Paris", -0.25, {"Paris": -0.25, "Paris~1": -1.75}),
        TokenLogprob(" is", -1.5, {" is": -1.5, " is~1": -3.0}),
    ]
    assert [t.token for t in comp.logprobs] == ["Rome", " was", " built"]
    assert [t.logprob for t in comp.logprobs] == [fake_logprob(t) for t in ["Rome", " was", " built"]]
    assert all(len(t.top) == 3 and t.top[t.token] == t.logprob for t in comp.logprobs)


def test_usage_and_cost_exact_on_scripted_run():
    replies = [
        ScriptedReply("a", prompt_tokens=100, completion_tokens=20),
        ScriptedReply("b", prompt_tokens=50, completion_tokens=5),
        ScriptedReply("c", prompt_tokens=7, completion_tokens=3),
    ]
    prices = {"fake-model": ModelPrice(prompt=0.15, completion=0.60)}
    with FakeOpenAIServer(queue_responder(replies), faults=[None, "500"]) as srv:

        async def calls(c):
            await c.chat(MSG, stage="decompose")
            await c.chat(MSG, stage="decompose")
            await c.complete("p", stage="label", max_tokens=4)
            return c.usage

        usage, _ = run_calls(make_cfg(srv, prices=prices), calls)
    summary = usage.summary()
    dec, lab, total = summary["stages"]["decompose"], summary["stages"]["label"], summary["total"]
    assert (dec["calls"], dec["prompt_tokens"], dec["completion_tokens"]) == (2, 150, 25)
    assert dec["retries"] == 1 and dec["errors"] == {"server_error": 1}
    assert dec["cost_usd"] == pytest.approx((150 * 0.15 + 25 * 0.60) / 1e6, rel=1e-12)
    assert (lab["calls"], lab["prompt_tokens"], lab["completion_tokens"]) == (1, 7, 3)
    assert total["cost_usd"] == pytest.approx((157 * 0.15 + 28 * 0.60) / 1e6, rel=1e-12)
    assert total["unpriced_models"] == []
    snap = usage.snapshot()
    assert snap["calls"] == 3 and snap["retries"] == 1 and snap["tok"] == 185
    assert usage.snapshot("label")["calls"] == 1


def test_unpriced_model_is_flagged():
    with FakeOpenAIServer(lambda r: "x") as srv:
        _, client = run_calls(make_cfg(srv), lambda c: c.chat(MSG))
    assert client.usage.summary()["total"]["unpriced_models"] == ["fake-model"]
    assert client.usage.total().cost_usd == 0.0


def test_parse_retry_after_forms():
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


# -- sync wrapper and config loading -------------------------------------------------------------


def test_sync_client_chat_and_batch():
    with FakeOpenAIServer(lambda r: "ok") as srv, LLMClient(make_cfg(srv, concurrency=3)) as client:
        one = client.chat(MSG)
        many = client.chat_many([[{"role": "user", "content": str(i)}] for i in range(6)])
        comps = client.complete_many(["a", "b"], max_tokens=3)
        assert srv.stats()["max_in_flight"] <= 3
    assert one.text == "ok"
    assert [r.text for r in many] == ["ok"] * 6
    assert len(comps) == 2
    assert client.usage.total().calls == 9
    assert SECRET not in repr(client)


def test_sync_client_return_exceptions():
    with (
        FakeOpenAIServer(lambda r: "ok", faults=[None, "400"]) as srv,
        LLMClient(make_cfg(srv, concurrency=1)) as client,
    ):
        out = client.chat_many([MSG, [{"role": "user", "content": "b"}]], return_exceptions=True)
    assert out[0].text == "ok"
    assert isinstance(out[1], LLMRequestError)


def test_config_loads_from_yaml_with_prices(tmp_path: Path):
    path = tmp_path / "llm.yaml"
    path.write_text(
        "model: gpt-4o-mini\nconcurrency: 8\nprices:\n  gpt-4o-mini: {prompt: 0.15, completion: 0.6}\n"
        "extra_body: {top_k: 20}\n"
    )
    cfg = load_config(LLMConfig, path, ["max_tokens=256", "base_url=http://localhost:8000/v1"])
    assert cfg.prices["gpt-4o-mini"] == ModelPrice(0.15, 0.6)
    assert cfg.concurrency == 8 and cfg.max_tokens == 256
    assert cfg.extra_body == {"top_k": 20}
    assert cfg.to_public_dict()["prices"] == {"gpt-4o-mini": {"prompt": 0.15, "completion": 0.6}}


def test_params_and_extra_body_reach_the_server_and_typos_fail_early():
    with FakeOpenAIServer(lambda r: "ok") as srv:
        cfg = make_cfg(srv, extra_body={"repetition_penalty": 1.1}, seed=3, max_tokens=50)

        async def calls(c):
            await c.chat(MSG, top_p=0.9, stop="\n", extra_body={"top_k": 5})
            await c.complete("p", logprobs=0, temperature=1, echo=False)
            with pytest.raises(LLMConfigError, match="tmperature"):
                await c.chat(MSG, tmperature=0.2)
            with pytest.raises(LLMConfigError, match="n != 1"):
                await c.chat(MSG, n=2)

        run_calls(cfg, calls)
        chat, comp = srv.request_bodies()
    assert chat["top_p"] == 0.9 and chat["stop"] == ["\n"] and chat["seed"] == 3 and chat["max_tokens"] == 50
    assert chat["top_k"] == 5 and chat["repetition_penalty"] == 1.1
    assert comp["logprobs"] == 0 and comp["temperature"] == 1.0 and comp["echo"] is False
    assert comp["prompt"] == "p" and comp["repetition_penalty"] == 1.1


def test_a_refused_connection_fails_after_one_short_retry_naming_the_endpoint():
    with FakeOpenAIServer(lambda r: "Paris") as srv, srv.refusing():
        cfg = make_cfg(srv, max_retries=6, backoff_base=30.0)
        sleep = RecordingSleep()
        with pytest.raises(EndpointUnreachableError) as info:
            run_calls(cfg, lambda c: c.chat(MSG, stage="c"), sleep=sleep)
    assert srv.base_url in str(info.value) and "connection refused" in str(info.value)
    # One short pause, not six exponential backoffs of up to 30 s each.
    assert sleep.delays == [UNREACHABLE_RETRY_DELAY_S] * cfg.unreachable_retries


def test_an_unknown_host_is_unreachable_at_once():
    cfg = LLMConfig(base_url="http://no-such-host.invalid/v1", model="m", unreachable_retries=0)
    sleep = RecordingSleep()
    with pytest.raises(EndpointUnreachableError) as info:
        run_calls(cfg, lambda c: c.chat(MSG), sleep=sleep)
    assert "no-such-host.invalid" in str(info.value) and "unknown host" in str(info.value)
    assert sleep.delays == []


def test_a_server_that_comes_up_during_the_short_retry_answers():
    srv = FakeOpenAIServer(lambda r: "Paris").start()
    try:
        cm = srv.refusing()
        cm.__enter__()

        class StartOnSleep(RecordingSleep):
            async def __call__(self, seconds: float) -> None:
                await super().__call__(seconds)
                cm.__exit__(None, None, None)  # the server is back before the retry

        resp, _ = run_calls(make_cfg(srv), lambda c: c.chat(MSG), sleep=StartOnSleep())
        assert resp.text == "Paris"
    finally:
        srv.stop()


def test_dropped_connections_are_still_retried_with_backoff():
    with FakeOpenAIServer(lambda r: "Paris", faults=["reset", "reset", "reset"]) as srv:
        sleep = RecordingSleep()
        with pytest.raises(RetriesExhaustedError) as info:
            run_calls(make_cfg(srv, max_retries=2), lambda c: c.chat(MSG, stage="c"), sleep=sleep)
        assert info.value.kind == "connection"
        assert len(sleep.delays) == 2 and srv.stats()["faults"] == {"reset": 3}
    with FakeOpenAIServer(lambda r: "Paris", faults=["reset"]) as srv:
        resp, _ = run_calls(make_cfg(srv), lambda c: c.chat(MSG))
        assert resp.text == "Paris"


def test_unwritable_cache_never_loses_the_response(tmp_path, caplog):
    broken = ResponseCache(tmp_path)
    broken.close()
    with FakeOpenAIServer(lambda r: "Paris") as srv:
        resp, _ = run_calls(make_cfg(srv), lambda c: c.chat(MSG), cache=broken)
    assert resp.text == "Paris" and not resp.cached
    assert "cache write failed" in caplog.text


def test_usage_tracker_is_thread_safe():
    from efficientrag.llm import TokenUsage, UsageTracker

    usage = UsageTracker({"m": ModelPrice(prompt=1.0, completion=1.0)})

    def work():
        for _ in range(2000):
            usage.record_response("s", "m", TokenUsage(2, 1), cached=False)
            usage.record_retry("s")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st = usage.stage("s")
    assert (st.calls, st.retries, st.prompt_tokens, st.completion_tokens) == (8000, 8000, 16000, 8000)
    assert st.cost_usd == pytest.approx(24000 / 1e6)
