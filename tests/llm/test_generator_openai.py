"""The OpenAI-compatible generator against the local fake server, through the real client."""

from __future__ import annotations

import math

import pytest

from efficientrag.llm.config import LLMConfig
from efficientrag.llm.factory import make_generator
from efficientrag.llm.generator import Generator, GeneratorCapabilityError
from efficientrag.llm.generator_config import GeneratorConfig, OpenAIGeneratorConfig
from efficientrag.llm.openai_generator import OpenAIGenerator
from efficientrag.testing.fake_completions import ScriptedReply, fake_logprob
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.fake_responders import rule_responder

SCRIPT = ScriptedReply(
    "Anna Weiss was born in Vienna.",
    token_logprobs=[
        ("Anna", -0.1),
        (" Weiss", -0.2),
        (" was born", -0.05),
        (" in", -1.5),
        (" Vienna", -2.0),
        (".", -0.01),
    ],
)


def _generator(server: FakeOpenAIServer, **overrides) -> OpenAIGenerator:
    llm = LLMConfig(
        base_url=server.base_url, model="fake-model", api_key="test-key", max_retries=0, timeout=10
    )
    cfg = OpenAIGeneratorConfig(llm=llm, **overrides)
    return OpenAIGenerator(cfg)


def _responder(request):
    text = request["prompt"] if "prompt" in request else request["messages"][-1]["content"]
    if "author" in text:
        return SCRIPT
    return f"reply to {text}"


@pytest.fixture
def server():
    with FakeOpenAIServer(_responder) as srv:
        yield srv


def test_factory_and_protocol(server):
    llm = LLMConfig(base_url=server.base_url, model="fake-model", api_key="k", max_retries=0)
    g = make_generator(GeneratorConfig(backend="openai", openai=OpenAIGeneratorConfig(llm=llm)))
    try:
        assert isinstance(g, OpenAIGenerator) and isinstance(g, Generator)
        assert g.supports.token_probs and g.supports.chat and not g.supports.attention
        assert not g.supports.entropies
    finally:
        g.close()


def test_chat_prompts_use_chat_and_strings_use_completions(server):
    with _generator(server) as g:
        outs = g.generate(
            [[{"role": "user", "content": "hello"}], "Question: hi\nAnswer:"],
            max_new_tokens=32,
        )
    assert outs[0].text == "reply to hello"
    assert outs[1].text == "reply to Question: hi\nAnswer:"
    assert server.requests_by_endpoint["chat"] == 1
    assert server.requests_by_endpoint["completions"] == 1
    (completion_body,) = server.request_bodies("completions")
    assert completion_body["prompt"] == "Question: hi\nAnswer:"
    assert completion_body["max_tokens"] == 32 and completion_body["temperature"] == 0.0
    assert all(o.finish_reason == "stop" for o in outs)
    assert outs[0].prompt_tokens == 1 and outs[0].completion_tokens == 3
    assert outs[0].token_probs is None and outs[0].tokens is None


def test_strings_go_to_chat_when_completions_are_off(server):
    with _generator(server, completions_for_text=False) as g:
        (out,) = g.generate(["plain text"], max_new_tokens=8)
    assert out.text == "reply to plain text"
    assert server.requests_by_endpoint == {"chat": 1}
    assert server.request_bodies("chat")[0]["messages"] == [{"role": "user", "content": "plain text"}]
    assert not g.supports.raw_completion


@pytest.mark.parametrize("as_chat", [True, False])
def test_scripted_logprobs_become_token_probs(server, as_chat):
    prompt = (
        [{"role": "user", "content": "Where was the author born?"}]
        if as_chat
        else "Where was the author born?"
    )
    with _generator(server) as g:
        (out,) = g.generate([prompt], max_new_tokens=64, want_token_probs=True)
    assert out.text == SCRIPT.text
    assert out.tokens == [t for t, _ in SCRIPT.token_logprobs]
    assert out.token_probs == pytest.approx([math.exp(lp) for _, lp in SCRIPT.token_logprobs])
    assert out.entropies is None
    body = server.request_bodies()[0]
    assert (body["logprobs"] is True) if as_chat else (body["logprobs"] == 1)


def test_stop_and_length_finish_reasons(server):
    with _generator(server) as g:
        stopped, cut = g.generate(
            ["Where was the author born?", "a b c d e f g h"],
            max_new_tokens=4,
            stop=[" in"],
            want_token_probs=True,
        )
    assert stopped.text == "Anna Weiss was born" and stopped.finish_reason == "stop"
    assert stopped.token_probs == pytest.approx([math.exp(-0.1), math.exp(-0.2), math.exp(-0.05)])
    assert cut.finish_reason == "length" and cut.completion_tokens == 4
    assert server.request_bodies("completions")[0]["stop"] == [" in"]


class _DropsLogprobs(FakeOpenAIServer):
    """A server that ignores the logprobs request, as many do."""

    def completion_body(self, endpoint, request, index, *, truncate=False):
        body = super().completion_body(endpoint, request, index, truncate=truncate)
        body["choices"][0]["logprobs"] = None
        return body


@pytest.mark.parametrize("prompt", ["text prompt", [{"role": "user", "content": "chat prompt"}]])
def test_missing_logprobs_is_a_clear_error(prompt):
    with _DropsLogprobs(_responder) as srv, _generator(srv) as g:
        assert g.generate([prompt], max_new_tokens=8)[0].text.startswith("reply to")
        with pytest.raises(GeneratorCapabilityError, match=r"returned no logprobs.*FLARE needs per-token"):
            g.generate([prompt], max_new_tokens=8, want_token_probs=True)


def test_attention_requested_is_a_clear_error_and_sends_nothing(server):
    with (
        _generator(server) as g,
        pytest.raises(GeneratorCapabilityError, match=r"DRAGIN.*local Hugging Face model"),
    ):
        g.generate(["x"], max_new_tokens=4, want_attention=True)
    assert server.total_requests == 0


def test_entropies_need_explicit_approximation(server):
    with _generator(server) as g, pytest.raises(GeneratorCapabilityError, match="approximate_entropies"):
        g.generate(["x"], max_new_tokens=4, want_entropies=True)
    with _generator(server, approximate_entropies=True, top_logprobs=3) as g:
        assert g.supports.entropies
        (out,) = g.generate(["a b"], max_new_tokens=8, want_entropies=True)
    assert server.request_bodies()[0]["logprobs"] == 3
    # The fake server's top-3: the chosen token, then two made-up ones 1.5 and 2.5 nats less likely.
    expected = []
    for token in out.tokens:
        lp = fake_logprob(token)
        values = [lp, round(lp - 1.5, 3), round(lp - 2.5, 3)]
        expected.append(-sum(math.exp(v) * v for v in values))
    assert out.entropies == pytest.approx(expected, rel=1e-6)


def test_prompts_run_concurrently_and_keep_order():
    with FakeOpenAIServer(rule_responder([], default=_responder), latency=0.2) as srv:
        with _generator(srv) as g:
            prompts = [f"prompt {i}" for i in range(8)]
            outs = g.generate(prompts, max_new_tokens=16)
        assert [o.text for o in outs] == [f"reply to {p}" for p in prompts]
        assert srv.max_in_flight > 1


def test_counters(server):
    with _generator(server) as g:
        outs = g.generate(["one two", [{"role": "user", "content": "three"}]], max_new_tokens=16)
        c = g.counters.snapshot()
    assert c["calls"] == 1 and c["prompts"] == 2 and c["forward_passes"] == 2
    assert c["prompt_tokens"] == sum(o.prompt_tokens for o in outs) > 0
    assert c["completion_tokens"] == sum(o.completion_tokens for o in outs) > 0
    assert c["attention_passes"] == 0


def test_bad_arguments(server):
    with _generator(server) as g:
        with pytest.raises(ValueError, match="max_new_tokens"):
            g.generate(["x"], max_new_tokens=0)
        with pytest.raises(ValueError, match="temperature"):
            g.generate(["x"], max_new_tokens=2, temperature=-1)
    assert server.total_requests == 0


def test_generator_config_loads_from_overrides():
    from efficientrag.config import load_config
    from efficientrag.errors import ConfigError

    cfg = load_config(
        GeneratorConfig,
        overrides=[
            "backend=openai",
            "openai.llm.model=my-model",
            "openai.llm.base_url=http://localhost:8000/v1",
            "openai.approximate_entropies=true",
            "hf.dtype=bfloat16",
        ],
    )
    assert cfg.backend == "openai" and cfg.openai.llm.model == "my-model"
    assert cfg.openai.approximate_entropies is True and cfg.hf.dtype == "bfloat16"
    with pytest.raises(ConfigError, match="dtype"):
        load_config(GeneratorConfig, overrides=["hf.dtype=float8"])
    with pytest.raises(ConfigError, match="backend"):
        load_config(GeneratorConfig, overrides=["backend=vllm"])
