"""The local HF generator against hand computation on a tiny random Llama (built once per module)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from efficientrag.llm.factory import make_generator
from efficientrag.llm.generator import Generator, GeneratorCapabilityError
from efficientrag.llm.generator_config import GeneratorConfig, HFGeneratorConfig
from efficientrag.llm.hf_generator import HFGenerator
from efficientrag.testing.tiny_models import build_tiny_causal_lm

PROMPTS = [
    "Question: Where was the author of the novel born? Answer:",
    "The film was directed by",
    "So the answer is",
    "Maria Lopez was born in Valencia in 1954. She studied physics at the",
]


@pytest.fixture(scope="module")
def tiny_lm_path(tmp_path_factory) -> str:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm"))


@pytest.fixture(scope="module")
def gen(tiny_lm_path) -> HFGenerator:
    return HFGenerator.from_config(HFGeneratorConfig(model=tiny_lm_path, batch_size=4))


@pytest.fixture(scope="module")
def eager_model(tiny_lm_path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_lm_path, attn_implementation="eager").eval()


def _forward_logits(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float()


def _argmax_loop(model, ids: list[int], max_new: int, eos: set[int]) -> list[int]:
    """Greedy decoding the slow way: a full forward pass per token, no cache, no processors."""
    out: list[int] = []
    for _ in range(max_new):
        nxt = int(_forward_logits(model, ids + out)[-1].argmax())
        out.append(nxt)
        if nxt in eos:
            break
    return out


def test_factory_builds_hf_generator_and_it_satisfies_the_protocol(tiny_lm_path):
    g = make_generator(GeneratorConfig(backend="hf", hf=HFGeneratorConfig(model=tiny_lm_path)))
    assert isinstance(g, HFGenerator)
    assert isinstance(g, Generator)
    assert g.supports.token_probs and g.supports.entropies and g.supports.attention and g.supports.chat


@pytest.mark.numerics
def test_greedy_is_deterministic_and_equals_manual_argmax_loop(gen, eager_model):
    first = gen.generate(PROMPTS[:2], max_new_tokens=12)
    second = gen.generate(PROMPTS[:2], max_new_tokens=12)
    assert [g.text for g in first] == [g.text for g in second]
    eos = set(gen._eos_ids)
    for prompt, out in zip(PROMPTS[:2], first, strict=True):
        ids = gen.encode(prompt).ids
        manual = _argmax_loop(eager_model, ids, 12, eos)
        # The checkpoint asks for sampling with top_k/top_p/repetition_penalty; none of it applies.
        expected = manual[:-1] if manual[-1] in eos else manual
        assert out.token_ids == expected
        assert out.completion_tokens == len(manual)
        assert out.finish_reason == ("stop" if manual[-1] in eos else "length")
        assert "".join(out.tokens) == out.text
        assert out.text == gen.tokenizer.decode(expected, skip_special_tokens=True)
        assert out.prompt_tokens == len(ids)


@pytest.mark.numerics
def test_token_probs_and_entropies_match_one_forward_pass(gen, eager_model):
    (out,) = gen.generate([PROMPTS[0]], max_new_tokens=10, want_token_probs=True, want_entropies=True)
    ids = gen.encode(PROMPTS[0]).ids
    logits = _forward_logits(eager_model, ids + out.token_ids)
    n = len(out.token_ids)
    steps = logits[len(ids) - 1 : len(ids) - 1 + n]
    probs = torch.softmax(steps, -1)
    expected_p = probs[torch.arange(n), torch.tensor(out.token_ids)].numpy()
    expected_h = (-(probs * torch.log(probs)).sum(-1)).numpy()
    np.testing.assert_allclose(out.token_probs, expected_p, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out.entropies, expected_h, rtol=1e-4, atol=1e-5)
    # Greedy picks the most likely token, so its probability is the row maximum.
    np.testing.assert_allclose(out.token_probs, probs.max(-1).values.numpy(), rtol=1e-4)
    assert len(out.tokens) == len(out.token_probs) == len(out.entropies) == n


def test_probs_not_returned_unless_asked(gen):
    (out,) = gen.generate([PROMPTS[1]], max_new_tokens=4)
    assert out.token_probs is None and out.entropies is None and out.attention is None
    assert out.tokens is not None


@pytest.mark.numerics
def test_attention_equals_eager_output_attentions_last_layer(gen, eager_model):
    before = gen.counters.snapshot()
    (out,) = gen.generate([PROMPTS[3]], max_new_tokens=8, want_attention=True, per_head_attention=True)
    view = out.attention
    ids = gen.encode(PROMPTS[3]).ids + out.token_ids
    with torch.no_grad():
        ref = eager_model(torch.tensor([ids]), output_attentions=True).attentions[-1][0].float().numpy()
    assert view.weights.dtype == np.float32
    assert view.weights.shape == (len(ids), len(ids))
    np.testing.assert_allclose(view.weights, ref.mean(0), atol=1e-6)
    np.testing.assert_allclose(view.per_head, ref, atol=1e-6)
    # Row = query, column = key: causal, so nothing above the diagonal, and each row sums to 1.
    assert np.allclose(np.triu(view.weights, 1), 0)
    np.testing.assert_allclose(view.weights.sum(1), 1.0, atol=1e-5)
    # The first layer differs from the last: the hook really picked the last layer.
    with torch.no_grad():
        first = eager_model(torch.tensor([ids]), output_attentions=True).attentions[0][0].float().numpy()
    assert not np.allclose(first.mean(0), view.weights, atol=1e-3)
    # Positions map back to text: prompt first, then the generated tokens.
    assert view.token_ids == ids
    assert view.prompt_length == len(ids) - len(out.token_ids)
    assert view.text == PROMPTS[3] + out.text
    assert view.tokens[view.prompt_length :] == out.tokens
    for tok, (a, b) in zip(view.tokens, view.offsets, strict=True):
        assert view.text[a:b] == tok
    assert view.tokens[0] == ""  # the BOS the tokenizer added has no text
    assert view.text[view.prompt_text_length :] == out.text
    spent = gen.counters.since(before)
    assert spent["attention_passes"] == 1 and spent["attention_tokens"] == len(ids)
    # Generation keeps its fast attention kernel; only the extra pass ran eager.
    assert gen.model.config._attn_implementation != "eager"


def test_attend_scores_a_given_text(gen, eager_model):
    text = "Anna Weiss was born in Vienna."
    (view,) = gen.attend([text])
    ids = gen.encode(text).ids
    with torch.no_grad():
        ref = eager_model(torch.tensor([ids]), output_attentions=True).attentions[-1][0].float().numpy()
    np.testing.assert_allclose(view.weights, ref.mean(0), atol=1e-6)
    assert view.prompt_length == len(ids) and list(view.generated_positions) == []
    pos = view.position_at_char(text.index("Vienna"))
    assert pos is not None and "Vi" in view.tokens[pos]


def test_stop_sequence_truncates_text_and_reports_stop(gen):
    (full,) = gen.generate([PROMPTS[0]], max_new_tokens=24, want_token_probs=True)
    # A stop string taken from the middle of the unstopped continuation.
    visible = [i for i, t in enumerate(full.tokens) if t.strip() and "\ufffd" not in t]
    k = visible[len(visible) // 2]
    stop = full.tokens[k].strip()[:2]
    cut = full.text.find(stop)
    (stopped,) = gen.generate(
        [PROMPTS[0]], max_new_tokens=24, stop=[stop, "zzzz-not-there"], want_token_probs=True
    )
    assert stopped.finish_reason == "stop"
    assert stopped.text == full.text[:cut]
    assert stop not in stopped.text
    assert "".join(stopped.tokens) == stopped.text
    n = len(stopped.tokens)
    assert stopped.token_probs == pytest.approx(full.token_probs[:n], rel=1e-5)
    assert n <= stopped.completion_tokens < full.completion_tokens


def test_pieces_keep_multibyte_characters_whole(gen):
    text = " café – naïve 東京"
    ids = gen.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) > len(text.split())  # byte-level: some characters span several tokens
    decoded, pieces = gen._pieces(gen.encode("The city").ids, ids)
    assert decoded == text and "".join(pieces) == text and len(pieces) == len(ids)
    assert "\ufffd" not in "".join(pieces)
    assert any(p == "" for p in pieces)  # leading bytes of a character carry no text yet
    # The leading space survives: the continuation is decoded after a few prompt tokens.
    assert pieces[0].startswith(" ")


def test_stop_never_seen_changes_nothing(gen):
    (plain,) = gen.generate([PROMPTS[2]], max_new_tokens=6)
    (out,) = gen.generate([PROMPTS[2]], max_new_tokens=6, stop=["\x00never"])
    assert (out.text, out.finish_reason, out.completion_tokens) == (
        plain.text,
        plain.finish_reason,
        plain.completion_tokens,
    )


@pytest.mark.numerics
def test_left_padded_batch_equals_one_by_one(tiny_lm_path, gen):
    single = HFGenerator(gen.model, gen.tokenizer, HFGeneratorConfig(model=tiny_lm_path, batch_size=1))
    batched = gen.generate(PROMPTS, max_new_tokens=10, want_token_probs=True, want_entropies=True)
    one_by_one = single.generate(PROMPTS, max_new_tokens=10, want_token_probs=True, want_entropies=True)
    lengths = {len(gen.encode(p).ids) for p in PROMPTS}
    assert len(lengths) > 1  # padding really happened
    for b, s in zip(batched, one_by_one, strict=True):
        assert b.token_ids == s.token_ids
        assert b.text == s.text
        np.testing.assert_allclose(b.token_probs, s.token_probs, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(b.entropies, s.entropies, rtol=1e-4, atol=1e-5)
    # One batch of one prompt takes one forward pass per generated token.
    assert single.counters["forward_passes"] == sum(s.completion_tokens for s in one_by_one)


@pytest.mark.numerics
def test_batch_results_keep_input_order(gen):
    outs = gen.generate(list(reversed(PROMPTS)), max_new_tokens=5)
    direct = [gen.generate([p], max_new_tokens=5)[0].text for p in reversed(PROMPTS)]
    assert [o.text for o in outs] == direct


def test_chat_template_used_for_message_prompts(gen, eager_model):
    messages = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Who directed the film?"},
    ]
    enc = gen.encode(messages)
    assert (
        enc.text
        == "<s><|system|>\nAnswer briefly.<|end|>\n<|user|>\nWho directed the film?<|end|>\n<|assistant|>\n"
    )
    assert enc.ids[0] == gen.tokenizer.bos_token_id and enc.ids.count(gen.tokenizer.bos_token_id) == 1
    (out,) = gen.generate([messages], max_new_tokens=8)
    assert out.prompt_tokens == len(enc.ids)
    manual = _argmax_loop(eager_model, enc.ids, 8, set(gen._eos_ids))
    assert out.token_ids == [t for t in manual if t not in gen._eos_ids]


def test_chat_prompt_ending_with_assistant_is_continued(gen):
    messages = [
        {"role": "user", "content": "Where was Anna Weiss born?"},
        {"role": "assistant", "content": "She was born in"},
    ]
    text = gen.render(messages)
    assert text.endswith("<|assistant|>\nShe was born in")
    (out,) = gen.generate([messages], max_new_tokens=4)
    assert out.prompt_tokens == len(gen.encode(messages).ids)


def test_message_prompt_without_chat_template_is_refused(tmp_path):
    path = build_tiny_causal_lm(tmp_path / "base", chat_template=False)
    g = HFGenerator.from_config(HFGeneratorConfig(model=path))
    assert not g.supports.chat
    with pytest.raises(ValueError, match="no chat template"):
        g.generate([[{"role": "user", "content": "hi"}]], max_new_tokens=2)
    assert g.generate(["plain text works"], max_new_tokens=2)[0].completion_tokens >= 1


def test_sampling_reports_raw_probabilities_and_is_seeded(tiny_lm_path, gen, eager_model):
    def sampler() -> HFGenerator:
        return HFGenerator(gen.model, gen.tokenizer, HFGeneratorConfig(model=tiny_lm_path, seed=7))

    a = sampler().generate([PROMPTS[0]], max_new_tokens=12, temperature=1.5, want_token_probs=True)[0]
    b = sampler().generate([PROMPTS[0]], max_new_tokens=12, temperature=1.5, want_token_probs=True)[0]
    assert a.token_ids == b.token_ids
    ids = gen.encode(PROMPTS[0]).ids
    logits = _forward_logits(eager_model, ids + a.token_ids)
    n = len(a.token_ids)
    probs = torch.softmax(logits[len(ids) - 1 : len(ids) - 1 + n], -1)
    # Probabilities are the model's own (temperature 1), not the temperature-1.5 distribution.
    np.testing.assert_allclose(
        a.token_probs, probs[torch.arange(n), torch.tensor(a.token_ids)].numpy(), rtol=1e-4
    )
    greedy = gen.generate([PROMPTS[0]], max_new_tokens=12)[0]
    assert a.token_ids != greedy.token_ids


def test_counters_accumulate(tiny_lm_path, gen):
    g = HFGenerator(gen.model, gen.tokenizer, HFGeneratorConfig(model=tiny_lm_path, batch_size=2))
    outs = g.generate(PROMPTS[:3], max_new_tokens=5)
    c = g.counters.snapshot()
    assert c["calls"] == 1 and c["prompts"] == 3
    assert c["prompt_tokens"] == sum(o.prompt_tokens for o in outs)
    assert c["completion_tokens"] == sum(o.completion_tokens for o in outs)
    assert 2 <= c["forward_passes"] <= 10  # two batches of at most 5 steps
    assert c["attention_passes"] == 0


def test_argument_and_length_errors(gen):
    with pytest.raises(ValueError, match="max_new_tokens"):
        gen.generate(["x"], max_new_tokens=0)
    with pytest.raises(TypeError, match="list of prompts"):
        gen.generate("a bare string", max_new_tokens=2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"prompts\[1\]\[0\]"):
        gen.generate(["ok", [{"content": "no role"}]], max_new_tokens=2)
    long_prompt = "the river " * 600
    with pytest.raises(ValueError, match=r"prompts\[0\] has \d+ tokens"):
        gen.generate([long_prompt], max_new_tokens=8)


def test_capability_check_names_method(gen):
    gen.supports.require(
        method="DRAGIN", generator=gen.name, token_probs=True, entropies=True, attention=True
    )
    from efficientrag.llm.generator import GeneratorSupport

    api_like = GeneratorSupport(
        token_probs=True, entropies=False, attention=False, chat=True, raw_completion=True
    )
    with pytest.raises(
        GeneratorCapabilityError, match="DRAGIN needs per-token entropies and attention weights"
    ):
        api_like.require(method="DRAGIN", generator="openai:x", entropies=True, attention=True)


def test_qwen2_architecture_attention_hook(tmp_path):
    from transformers import AutoModelForCausalLM

    path = build_tiny_causal_lm(tmp_path / "qwen", arch="qwen2", seed=3)
    g = HFGenerator.from_config(HFGeneratorConfig(model=path))
    (out,) = g.generate(["The museum opened in"], max_new_tokens=5, want_attention=True)
    ids = g.encode("The museum opened in").ids + out.token_ids
    ref_model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    with torch.no_grad():
        ref = ref_model(torch.tensor([ids]), output_attentions=True).attentions[-1][0].mean(0).numpy()
    np.testing.assert_allclose(out.attention.weights, ref, atol=1e-6)


def test_tiny_model_build_is_deterministic(tmp_path):
    a = build_tiny_causal_lm(tmp_path / "a", seed=5)
    b = build_tiny_causal_lm(tmp_path / "b", seed=5)
    c = build_tiny_causal_lm(tmp_path / "c", seed=6)
    from pathlib import Path

    weights = [(Path(p) / "model.safetensors").read_bytes() for p in (a, b, c)]
    assert weights[0] == weights[1] != weights[2]
    assert (Path(a) / "tokenizer.json").read_text() == (Path(b) / "tokenizer.json").read_text()
