"""A run killed mid-way resumes without duplicates and without asking the LLM again for finished
questions (the fake server lives in this process, so it sees both runs' requests)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from efficientrag.baselines.iter_retgen import IterRetGen, IterRetGenConfig
from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.loader import load_data
from efficientrag.eval.runner import run_method
from efficientrag.jsonl import read_done_ids, read_jsonl
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.generator_config import OpenAIGeneratorConfig
from efficientrag.llm.openai_generator import OpenAIGenerator
from efficientrag.testing.fake_completions import request_text
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.word_overlap import WordOverlapRetriever

TOY = {"num_questions": 6, "seed": 1}

SCRIPT = textwrap.dedent(
    """
    import sys
    from efficientrag.baselines.iter_retgen import IterRetGen, IterRetGenConfig
    from efficientrag.data.config import DataConfig, ToyWorldConfig
    from efficientrag.data.loader import load_data
    from efficientrag.eval.runner import run_method
    from efficientrag.llm.config import LLMConfig
    from efficientrag.llm.generator_config import OpenAIGeneratorConfig
    from efficientrag.llm.openai_generator import OpenAIGenerator
    from efficientrag.testing.word_overlap import WordOverlapRetriever

    base_url, out_dir = sys.argv[1], sys.argv[2]
    pooled = load_data(DataConfig(dataset="toy", toy=ToyWorldConfig(num_questions=6, seed=1)))
    gen = OpenAIGenerator(OpenAIGeneratorConfig(llm=LLMConfig(base_url=base_url, model="m", api_key="k")))
    method = IterRetGen(WordOverlapRetriever(pooled.corpus), lambda: gen, IterRetGenConfig(iterations=2, top_k=3))
    print("started", flush=True)
    run_method(method, pooled.examples, out_dir, batch_size=1, progress=False)
    """
)


def _responder(request):
    return '{"thought": "It is in the documents.", "answer": "Nobody"}'


def test_killed_run_resumes_without_duplicates_or_repeated_calls(tmp_path):
    out = tmp_path / "run"
    pred_path = out / "predictions.jsonl"
    pooled = load_data(DataConfig(dataset="toy", toy=ToyWorldConfig(**TOY)))
    with FakeOpenAIServer(_responder, latency=0.15) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, srv.base_url, str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                if pred_path.is_file() and len(read_done_ids(pred_path)) >= 2:
                    break
                time.sleep(0.02)
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        done_before = read_done_ids(pred_path)
        assert 2 <= len(done_before) < len(pooled.examples)
        srv.reset_stats()

        gen = OpenAIGenerator(
            OpenAIGeneratorConfig(llm=LLMConfig(base_url=srv.base_url, model="m", api_key="k"))
        )
        method = IterRetGen(
            WordOverlapRetriever(pooled.corpus), lambda: gen, IterRetGenConfig(iterations=2, top_k=3)
        )
        summary = run_method(method, pooled.examples, out, batch_size=1, progress=False)
        bodies = srv.request_bodies()

    ids = [r["id"] for r in read_jsonl(pred_path)]
    assert sorted(ids) == sorted(ex.id for ex in pooled.examples)  # every question once
    assert summary["n"] == len(pooled.examples) and summary["num_failed"] == 0
    remaining = len(pooled.examples) - len(done_before)
    assert len(bodies) == 2 * remaining  # two iterations per unfinished question, nothing more
    finished_questions = {ex.question for ex in pooled.examples if ex.id in done_before}
    for body in bodies:
        asked = request_text(body).rsplit("Question: ", 1)[1].split("\nAnswer:")[0]
        assert asked not in finished_questions
