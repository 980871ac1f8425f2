"""The fake OpenAI-compatible server: shapes the real `openai` client accepts, scripting, faults,
concurrency, and the command-line process."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from efficientrag.testing.fake_completions import ScriptedReply, fake_logprob, tokenize
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.fake_responders import echo_responder, queue_responder, rule_responder

USER = [{"role": "user", "content": "What is the capital of France?"}]


def sdk(srv: FakeOpenAIServer, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0, **kw)


def post(srv: FakeOpenAIServer, path: str, body: dict) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        srv.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_tokenize_round_trips_text():
    text = "  Paris is\nthe capital.  "
    assert "".join(tokenize(text)) == text
    assert tokenize("a bc") == ["a", " bc"]


def test_chat_reply_has_openai_shape_and_usage():
    with FakeOpenAIServer(rule_responder([(r"capital of (\w+)", "Paris")])) as srv:
        out = sdk(srv).chat.completions.create(model="m1", messages=USER)
    assert out.object == "chat.completion"
    assert out.model == "m1"
    assert out.choices[0].message.content == "Paris"
    assert out.choices[0].finish_reason == "stop"
    assert out.usage.prompt_tokens == len(tokenize(USER[0]["content"]))
    assert out.usage.completion_tokens == 1
    assert out.usage.total_tokens == out.usage.prompt_tokens + 1


def test_chat_logprobs_shape():
    with FakeOpenAIServer(lambda r: "Paris is big") as srv:
        out = sdk(srv).chat.completions.create(model="m", messages=USER, logprobs=True, top_logprobs=3)
    content = out.choices[0].logprobs.content
    assert [c.token for c in content] == ["Paris", " is", " big"]
    assert content[1].logprob == fake_logprob(" is")
    assert content[1].bytes == list(b" is")
    assert len(content[1].top_logprobs) == 3
    assert content[1].top_logprobs[0].token == " is"
    assert all(t.logprob < content[1].logprob for t in content[1].top_logprobs[1:])


def test_completions_logprobs_shape_with_scripted_values():
    reply = ScriptedReply("Paris.", token_logprobs=[("Paris", -0.1), (".", -0.7)])
    with FakeOpenAIServer(lambda r: reply) as srv:
        out = sdk(srv).completions.create(model="m", prompt="Q: capital?\nA:", logprobs=2, max_tokens=10)
    lp = out.choices[0].logprobs
    assert out.object == "text_completion"
    assert out.choices[0].text == "Paris."
    assert lp.tokens == ["Paris", "."]
    assert lp.token_logprobs == [-0.1, -0.7]
    assert lp.top_logprobs[0]["Paris"] == -0.1 and len(lp.top_logprobs[0]) == 2
    assert lp.text_offset == [len("Q: capital?\nA:"), len("Q: capital?\nA:") + 5]


def test_scripted_logprob_tokens_must_join_to_text():
    bad = ScriptedReply("Paris", token_logprobs=[("Rome", -0.1)])
    with FakeOpenAIServer(lambda r: bad) as srv:
        status, _, body = post(srv, "/chat/completions", {"model": "m", "messages": USER})
    assert status == 400
    assert "do not join" in json.loads(body)["error"]["message"]


def test_max_tokens_cuts_reply_with_length_and_stop_cuts_with_stop():
    with FakeOpenAIServer(lambda r: "one two three four") as srv:
        client = sdk(srv)
        cut = client.chat.completions.create(model="m", messages=USER, max_tokens=2)
        stopped = client.completions.create(model="m", prompt="x", stop=[" three"], max_tokens=50)
    assert cut.choices[0].message.content == "one two"
    assert cut.choices[0].finish_reason == "length"
    assert cut.usage.completion_tokens == 2
    assert stopped.choices[0].text == "one two"
    assert stopped.choices[0].finish_reason == "stop"


def test_models_endpoint_and_unknown_route():
    with FakeOpenAIServer(model="my-model") as srv:
        models = sdk(srv).models.list()
        status, _, _ = post(srv, "/nope", {})
    assert [m.id for m in models.data] == ["my-model"]
    assert status == 404


def test_queue_responder_in_order_then_fallback_or_error():
    queue = queue_responder(["first", ScriptedReply("second", finish_reason="stop")], then=echo_responder)
    with FakeOpenAIServer(queue) as srv:
        client = sdk(srv)
        texts = [
            client.chat.completions.create(model="m", messages=USER).choices[0].message.content
            for _ in range(3)
        ]
    assert texts == ["first", "second", "echo: " + USER[0]["content"]]
    assert queue.remaining == 0

    with FakeOpenAIServer(queue_responder(["only"])) as srv:
        client = sdk(srv)
        client.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.BadRequestError, match="exhausted"):
            client.chat.completions.create(model="m", messages=USER)


def test_rule_responder_uses_last_user_message_and_match_groups():
    responder = rule_responder(
        [(r"born in (\w+)", lambda m, req: f"city={m.group(1)}"), (r"capital", "Paris")],
        default=lambda req: "unknown",
    )
    chat = {
        "messages": [
            {"role": "user", "content": "capital?"},
            {"role": "assistant", "content": "Paris"},
            {"role": "user", "content": [{"type": "text", "text": "Where was she born in Lyon"}]},
        ]
    }
    assert responder(chat) == "city=Lyon"
    assert responder({"prompt": "the capital"}) == "Paris"
    assert responder({"prompt": "nothing"}) == "unknown"


@pytest.mark.parametrize("status", ["500", "502", "503"])
def test_server_error_faults(status):
    with FakeOpenAIServer(faults=[status]) as srv:
        code, _, body = post(srv, "/chat/completions", {"model": "m", "messages": USER})
        ok, _, _ = post(srv, "/chat/completions", {"model": "m", "messages": USER})
    assert code == int(status)
    assert json.loads(body)["error"]["type"] == "server_error"
    assert ok == 200
    assert srv.stats()["faults"] == {status: 1}


def test_rate_limit_fault_sends_retry_after_headers():
    with FakeOpenAIServer(faults=["429"], retry_after=2.5) as srv:
        code, headers, _ = post(srv, "/chat/completions", {"model": "m", "messages": USER})
    assert code == 429
    assert {k.lower(): v for k, v in headers.items()}["retry-after"] == "2.5"
    with FakeOpenAIServer(faults=["429"], retry_after=0.25, retry_after_header="retry-after-ms") as srv:
        _, headers, _ = post(srv, "/chat/completions", {"model": "m", "messages": USER})
    assert {k.lower(): v for k, v in headers.items()}["retry-after-ms"] == "250"


def test_malformed_and_truncated_faults():
    with FakeOpenAIServer(lambda r: "a b c d e f", faults=["malformed", "truncated"]) as srv:
        code, headers, body = post(srv, "/chat/completions", {"model": "m", "messages": USER})
        code2, _, body2 = post(srv, "/chat/completions", {"model": "m", "messages": USER})
    assert code == 200 and headers["Content-Type"] == "application/json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)
    choice = json.loads(body2)["choices"][0]
    assert code2 == 200
    assert choice["finish_reason"] == "length"
    assert choice["message"]["content"] == "a b c"


def test_slow_fault_outlasts_client_timeout():
    with FakeOpenAIServer(faults=["slow"], slow_seconds=3.0) as srv:
        with pytest.raises(openai.APITimeoutError):
            sdk(srv, timeout=0.2).chat.completions.create(model="m", messages=USER)
        assert srv.stats()["faults"] == {"slow": 1}


def test_callable_fault_script_and_client_error_faults():
    def script(index, endpoint, body):
        return {0: "400", 1: "401"}.get(index)

    with FakeOpenAIServer(faults=script) as srv:
        client = sdk(srv)
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.AuthenticationError):
            client.completions.create(model="m", prompt="x")
        client.completions.create(model="m", prompt="x")
    assert srv.stats()["requests"] == {"chat": 1, "completions": 2}


def test_require_api_key():
    with FakeOpenAIServer(require_api_key="right") as srv:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=srv.base_url, api_key="wrong", max_retries=0).chat.completions.create(
                model="m", messages=USER
            )
        ok = openai.OpenAI(base_url=srv.base_url, api_key="right", max_retries=0).chat.completions.create(
            model="m", messages=USER
        )
    assert ok.choices[0].message.content.startswith("echo:")


def test_random_faults_are_reproducible_from_the_seed():
    def run(seed: int) -> list[str | None]:
        with FakeOpenAIServer(fault_rate=0.5, seed=seed, retry_after=0) as srv:
            for _ in range(30):
                post(srv, "/completions", {"model": "m", "prompt": "x"})
            return [r.fault for r in srv.received]

    first, again, other = run(7), run(7), run(8)
    assert first == again
    assert first != other
    assert 0 < sum(f is not None for f in first) < 30


def test_unknown_fault_kind_rejected():
    with pytest.raises(ValueError, match="unknown fault"):
        FakeOpenAIServer(fault_kinds=["500", "teapot"])


def test_request_log_and_stats():
    with FakeOpenAIServer() as srv:
        client = sdk(srv)
        client.chat.completions.create(model="m", messages=USER, temperature=0.0)
        client.completions.create(model="m", prompt="hello")
        assert srv.request_bodies("chat")[0]["messages"] == USER
        assert srv.request_bodies("completions")[0]["prompt"] == "hello"
        assert srv.total_requests == 2
        srv.reset_stats()
        assert srv.stats() == {
            "requests": {},
            "total_requests": 0,
            "faults": {},
            "max_in_flight": 0,
            "in_flight": 0,
        }


def test_sustains_64_concurrent_requests():
    # Every request blocks until all 64 are inside the server at once: this only passes if the
    # server really holds 64 requests in flight (a timeout breaks the barrier otherwise).
    barrier = threading.Barrier(64, timeout=20)

    def responder(request):
        barrier.wait()
        return "ok"

    with FakeOpenAIServer(responder) as srv:
        client = sdk(srv, timeout=30)

        def one(i):
            return client.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])

        with ThreadPoolExecutor(64) as pool:
            results = list(pool.map(one, range(64)))
        stats = srv.stats()
    assert [r.choices[0].message.content for r in results] == ["ok"] * 64
    assert stats["max_in_flight"] == 64
    assert stats["in_flight"] == 0


def test_runs_as_a_process(tmp_path):
    stats_file = tmp_path / "stats.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "efficientrag.testing.fake_openai",
            "--port",
            "0",
            "--script",
            "efficientrag.testing.fake_openai:echo_responder",
            "--stats-file",
            str(stats_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
        out = client.completions.create(model="m", prompt="ping")
        assert out.choices[0].text == "echo: ping"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode == 0
    assert json.loads(stats_file.read_text())["requests"] == {"completions": 1}
