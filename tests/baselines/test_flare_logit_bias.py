"""The logit bias FLARE-instruct needs, on both generator backends."""

from __future__ import annotations

import pytest
import torch

from efficientrag.baselines.flare import bracket_ids
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.generator_config import HFGeneratorConfig, OpenAIGeneratorConfig
from efficientrag.llm.hf_generator import HFGenerator
from efficientrag.llm.openai_generator import OpenAIGenerator
from efficientrag.testing.fake_openai import FakeOpenAIServer

PROMPT = "Question: Where was the author of the novel born? Answer:"


@pytest.fixture(scope="module")
def gen(tiny_lm_path) -> HFGenerator:
    return HFGenerator.from_config(HFGeneratorConfig(model=tiny_lm_path))


@pytest.mark.numerics
def test_bias_steers_the_choice_but_probabilities_stay_the_models(gen):
    plain = gen.generate([PROMPT], max_new_tokens=3, want_token_probs=True)[0]
    ids = gen.encode(PROMPT).ids
    with torch.no_grad():
        logits = gen.model(torch.tensor([ids])).logits[0, -1].float()
    probs = torch.softmax(logits, -1)
    target = int(torch.argsort(probs)[len(probs) // 2])  # an unlikely token
    assert target != plain.token_ids[0]
    pushed = gen.generate([PROMPT], max_new_tokens=3, want_token_probs=True, logit_bias={target: 100.0})[0]
    assert pushed.token_ids[0] == target
    assert pushed.token_probs[0] == pytest.approx(float(probs[target]), rel=1e-4)
    banned = gen.generate([PROMPT], max_new_tokens=1, logit_bias={plain.token_ids[0]: -100.0})[0]
    assert banned.token_ids[0] != plain.token_ids[0]
    # No bias: unchanged greedy output.
    assert gen.generate([PROMPT], max_new_tokens=3, logit_bias={})[0].token_ids == plain.token_ids


def test_bias_keys_are_checked(gen):
    with pytest.raises(ValueError, match="not a token id"):
        gen.generate([PROMPT], max_new_tokens=1, logit_bias={10**9: 1.0})
    with pytest.raises(ValueError, match="not a token id"):
        gen.generate([PROMPT], max_new_tokens=1, logit_bias={"[": 1.0})


def test_bracket_ids_come_from_the_local_vocabulary(gen):
    ids = bracket_ids(gen)
    assert ids and all(gen.tokenizer.decode([i]).strip() == "[" for i in ids)


def test_api_bias_is_sent_in_the_openai_form():
    with FakeOpenAIServer(lambda r: " ok") as server:
        llm = LLMConfig(base_url=server.base_url, model="fake", api_key="k", max_retries=0, timeout=10)
        with OpenAIGenerator(OpenAIGeneratorConfig(llm=llm)) as api:
            api.generate(["text"], max_new_tokens=4, logit_bias={518: 2.0})
            api.generate(["text"], max_new_tokens=4)
            with pytest.raises(ValueError, match=r"outside \[-100, 100\]"):
                api.generate(["text"], max_new_tokens=4, logit_bias={518: 500.0})
        bodies = server.request_bodies("completions")
    assert bodies[0]["logit_bias"] == {"518": 2.0}
    assert "logit_bias" not in bodies[1] and len(bodies) == 2
