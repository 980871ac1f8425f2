"""FLARE takes the same decisions over an OpenAI-compatible server as over a local model.

FLARE runs once on a tiny local model, recording every generation (text, token pieces and their
probabilities). The fake server is then scripted to answer each prompt with exactly that
generation, as logprobs, and FLARE runs again through the real ``openai`` client: triggers, masks,
queries, documents and the answer must all be the same.
"""

from __future__ import annotations

import math

import pytest
import torch

from efficientrag.baselines.flare import Flare, FlareConfig
from efficientrag.baselines.prompts.cot_exemplars import EXEMPLAR_SETS
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk, Example
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.generator_config import HFGeneratorConfig, OpenAIGeneratorConfig
from efficientrag.llm.hf_generator import HFGenerator
from efficientrag.llm.openai_generator import OpenAIGenerator
from efficientrag.testing.fake_completions import ScriptedReply
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.tiny_models import build_tiny_causal_lm
from efficientrag.testing.word_overlap import WordOverlapRetriever

CORPUS = Corpus(
    [
        Chunk("alpha", "Alpha Film", "Alpha Film is a drama directed by Bob Stone."),
        Chunk("bob", "Bob Stone", "Bob Stone was born in Paris."),
        Chunk("madrid", "Madrid", "Madrid is the capital of Spain and a large city."),
        Chunk("lake", "Lake Titicaca", "Lake Titicaca lies between Peru and Bolivia."),
        Chunk("cambridge", "Cambridge", "The University of Cambridge is in the city of Cambridge."),
    ]
)
EXAMPLES = [
    Example("q1", "Where was the director of Alpha Film born?", ["Paris"], ["alpha", "bob"]),
    Example("q2", "Which city is the capital of Spain?", ["Madrid"], ["madrid"]),
]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class Recorder:
    """The local generator, remembering each prompt's generation."""

    def __init__(self, inner: HFGenerator):
        self.inner = inner
        self.name, self.supports, self.counters, self.tokenizer = (
            inner.name,
            inner.supports,
            inner.counters,
            None,
        )
        self.by_prompt: dict[str, object] = {}

    def generate(self, prompts, **kw):
        out = self.inner.generate(prompts, **kw)
        for p, g in zip(prompts, out, strict=True):
            self.by_prompt[p] = g
        return out


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory) -> str:
    texts = [e.question + " " + e.answer for s in EXEMPLAR_SETS.values() for e in s]
    return build_tiny_causal_lm(tmp_path_factory.mktemp("flare_lm"), vocab_texts=texts, vocab_size=1024)


@pytest.mark.parametrize("query", ["masked", "explicit"])
def test_same_decisions_over_the_server_as_over_the_local_model(tiny_path, query):
    path = tiny_path
    local = Recorder(HFGenerator.from_config(HFGeneratorConfig(model=path, batch_size=4)))
    # theta 0.15: some look-aheads of the random model are confident enough, others are not.
    cfg = FlareConfig(
        exemplars="toy",
        num_exemplars=1,
        top_k=2,
        max_new_tokens=40,
        look_ahead=12,
        theta=0.15,
        beta=0.12,
        query=query,
    )
    # One question at a time: the local run sees each prompt exactly as the server will.
    local_preds = [Flare(WordOverlapRetriever(CORPUS), local, cfg).run_batch([ex])[0] for ex in EXAMPLES]

    def replay(request):
        g = local.by_prompt[request["prompt"]]
        probs = g.token_probs if g.token_probs is not None else [1.0] * len(g.tokens)
        finish = "length" if g.finish_reason == "length" else "stop"
        return ScriptedReply(
            g.text,
            token_logprobs=[(t, math.log(p)) for t, p in zip(g.tokens, probs, strict=True)],
            finish_reason=finish,
        )

    with FakeOpenAIServer(replay) as server:
        llm = LLMConfig(base_url=server.base_url, model="fake", api_key="k", max_retries=0, timeout=10)
        with OpenAIGenerator(OpenAIGeneratorConfig(llm=llm)) as api:
            api_preds = [Flare(WordOverlapRetriever(CORPUS), api, cfg).run_batch([ex])[0] for ex in EXAMPLES]

    decisions = 0
    for a, b in zip(local_preds, api_preds, strict=True):
        assert a.raw_output == b.raw_output and a.answer == b.answer
        assert [c.id for c in a.chunks] == [c.id for c in b.chunks]
        for sa, sb in zip(a.trace["steps"], b.trace["steps"], strict=True):
            for key in (
                "kind",
                "lookahead",
                "retrieved",
                "masked",
                "queries",
                "doc_ids",
                "text",
                "spans",
                "questions",
            ):
                assert sa.get(key) == sb.get(key), key
            if "min_prob" in sa:
                assert sa["min_prob"] == pytest.approx(sb["min_prob"], rel=1e-9)
                decisions += 1
        for key in ("llm_calls", "lookahead_calls", "regenerate_calls", "retrieval_steps", "retrieval_calls"):
            assert a.counters.get(key) == b.counters.get(key), key
    retrieved = [s["retrieved"] for p in local_preds for s in p.trace["steps"] if "retrieved" in s]
    assert decisions >= 3 and any(retrieved) and not all(retrieved)
