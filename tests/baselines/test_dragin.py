"""DRAGIN against hand computation on a tiny random Llama-style model.

RIND and QFS are recomputed here from one independent eager forward pass (``output_attentions``,
raw logits), not from the generator's own attention view; the method's decisions must agree.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from spacy.lang.en.stop_words import STOP_WORDS

from efficientrag.baselines.active.qfs import official_word_attention, qfs_official
from efficientrag.baselines.active.rind import rind_paper, sentence_scores_official, token_influence_official
from efficientrag.baselines.dragin import Dragin, DraginConfig, token_content
from efficientrag.baselines.prompts.continuation import DOC_INSTRUCTION, PromptBuilder, format_document
from efficientrag.baselines.prompts.cot_exemplars import EXEMPLAR_SETS, TOY
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk, Example
from efficientrag.llm.generator import GeneratorCapabilityError
from efficientrag.llm.generator_config import HFGeneratorConfig
from efficientrag.llm.hf_generator import HFGenerator
from efficientrag.testing.tiny_models import build_tiny_causal_lm
from efficientrag.testing.word_overlap import WordOverlapRetriever

QUESTION = "Where was the director of Alpha Film born?"
STOP = ["\n\n", "\nQuestion:"]
CORPUS = Corpus(
    [
        Chunk("alpha", "Alpha Film", "Alpha Film is a drama directed by Bob Stone."),
        Chunk("bob", "Bob Stone", "Bob Stone was born in Paris."),
        Chunk("madrid", "Madrid", "Madrid is the capital of Spain."),
        Chunk("country", "Portugal", "Portugal is a country in Europe."),
    ]
)
EXAMPLE = Example("q1", QUESTION, ["Paris"], ["alpha", "bob"])


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models run fastest single-threaded (and the CPU is shared)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def gen(tmp_path_factory) -> HFGenerator:
    texts = [e.question + " " + e.answer for s in EXEMPLAR_SETS.values() for e in s]
    path = build_tiny_causal_lm(
        tmp_path_factory.mktemp("dragin_lm"), max_positions=2048, vocab_texts=texts, vocab_size=1024
    )
    return HFGenerator.from_config(HFGeneratorConfig(model=path, batch_size=4))


@pytest.fixture(scope="module")
def eager(gen):
    from transformers import AutoModelForCausalLM

    path = gen.cfg.model
    return AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()


def _cfg(**kw) -> DraginConfig:
    return DraginConfig(**{"exemplars": "toy", "num_exemplars": 1, "top_k": 2, "max_new_tokens": 16, **kw})


def _forward(eager, ids):
    """Last-layer attention (heads averaged and per head) and next-token entropies, one pass."""
    with torch.no_grad():
        out = eager(torch.tensor([ids]), output_attentions=True)
    heads = out.attentions[-1][0].double()
    logp = torch.log_softmax(out.logits[0].double(), -1)
    entropy = -(logp.exp() * logp).sum(-1)
    return heads.mean(0).numpy(), heads.numpy(), entropy.numpy()


def _indicator(pieces):
    """s_i, written out: the token has a letter or digit, and its whitespace word is no stopword."""
    text, out, pos = "".join(pieces), [], 0
    for piece in pieces:
        c = pos + len(piece) - len(piece.lstrip())
        pos += len(piece)
        m = next((m for m in re.finditer(r"\S+", text) if m.start() <= c < m.end()), None)
        core = re.sub(r"^\W+|\W+$", "", m.group()).lower() if m else ""
        out.append(any(ch.isalnum() for ch in piece) and bool(core) and core not in STOP_WORDS)
    return out


def _first_generation(gen, eager, max_new_tokens=16):
    prompt = PromptBuilder(TOY[:1]).render(QUESTION)
    g = gen.generate(
        [prompt.text], max_new_tokens=max_new_tokens, stop=STOP, want_entropies=True, want_attention=True
    )[0]
    ids = gen.encode(prompt.text).ids
    attn, heads, entropy = _forward(eager, ids + g.token_ids)
    return prompt, g, ids, attn, entropy


@pytest.mark.numerics
def test_rind_scores_equal_entropy_times_later_attention_times_indicator(gen, eager):
    prompt, g, ids, attn, entropy = _first_generation(gen, eager)
    start, n = len(ids), len(g.tokens)
    expected = []
    s = _indicator(g.tokens)
    for i in range(n):
        later = [attn[start + j, start + i] for j in range(i + 1, n)]
        expected.append(entropy[start + i - 1] * (max(later) if later else 0.0) * s[i])
    got = rind_paper(g.entropies, g.attention.weights, g.attention.prompt_length, token_content(g.tokens))
    assert token_content(g.tokens) == s
    assert any(s) and not all(s)  # the output has content words and stopwords/punctuation
    assert np.allclose(got, expected, rtol=1e-4, atol=1e-7)
    assert got[-1] == 0.0 and (got > 0).sum() >= 3


def test_trigger_truncation_and_qfs_follow_the_attention_of_the_trigger(gen, eager):
    prompt, g, ids, attn, entropy = _first_generation(gen, eager)
    scores = rind_paper(g.entropies, g.attention.weights, len(ids), token_content(g.tokens))
    best = int(np.argmax(scores))
    top_n = 6
    retriever = WordOverlapRetriever(CORPUS)
    dragin = Dragin(retriever, gen, _cfg(theta=float(scores[best]) * 0.999, top_n=top_n))
    pred = dragin.run_batch([EXAMPLE])[0]
    step = pred.trace["steps"][0]
    assert step["triggered"] and step["trigger_index"] == best

    # Truncation at the start of the trigger's word (letters glued across token boundaries).
    text = "".join(g.tokens)
    c = sum(len(p) for p in g.tokens[:best])
    while c > 0 and text[c - 1].isalnum() and text[c].isalnum():
        c -= 1
    assert step["text"] == text[:c]

    # QFS: the question's and the output's earlier tokens, ranked by the trigger's attention row.
    offsets = gen.encode(prompt.text).offsets
    q0, q1 = prompt.question_span
    pieces = [prompt.text[a:b] for a, b in offsets] + list(g.tokens)
    candidates = [
        j
        for j in range(len(ids) + best)
        if any(ch.isalnum() for ch in pieces[j])
        and (j >= len(ids) or (offsets[j][0] < q1 and offsets[j][1] > q0))
    ]
    row = attn[len(ids) + best]
    ranked = sorted(candidates, key=lambda j: -row[j])[:top_n]
    assert step["query_positions"] == sorted(ranked)
    full = prompt.text + text
    spans = [(a, b) for a, b in offsets] + [
        (len(prompt.text) + a, len(prompt.text) + b) for a, b in _spans(g.tokens)
    ]
    words = []
    for j in sorted(ranked):
        c = spans[j][0] + len(pieces[j]) - len(pieces[j].lstrip())
        m = next(m for m in re.finditer(r"\S+", full) if m.start() <= c < m.end())
        w = re.sub(r"^\W+|\W+$", "", m.group())
        if w and (not words or words[-1][0] != m.start()):
            words.append((m.start(), w))
    assert step["query"] == " ".join(w for _, w in words)
    assert retriever.queries == [step["query"]]
    assert step["new_doc_ids"] == [h.id for h in WordOverlapRetriever(CORPUS).search([step["query"]], 2)[0]]


def _spans(pieces):
    out, pos = [], 0
    for p in pieces:
        out.append((pos, pos + len(p)))
        pos += len(p)
    return out


class Recording:
    """Delegates to the HF generator and keeps every prompt it was given."""

    def __init__(self, inner: HFGenerator):
        self.inner = inner
        self.name, self.supports, self.counters, self.tokenizer = (
            inner.name,
            inner.supports,
            inner.counters,
            inner.tokenizer,
        )
        self.calls: list[tuple[list[str], dict]] = []
        self.attended: list[str] = []

    def generate(self, prompts, **kw):
        self.calls.append((list(prompts), kw))
        return self.inner.generate(prompts, **kw)

    def attend(self, texts, per_head=False):
        self.attended += list(texts)
        return self.inner.attend(texts, per_head=per_head)


def _docs_in(prompt: str) -> list[str]:
    head = prompt.rsplit("Question: ", 1)[0]
    if not head.endswith(DOC_INSTRUCTION + "\n"):
        return []
    by_text = {format_document(c): c.id for c in CORPUS}
    block = head[: -len(DOC_INSTRUCTION) - 1].rsplit("Context:\n", 1)[1]
    return [by_text[line.split("] ", 1)[1]] for line in block.strip().split("\n")]


def test_paper_variant_retrieves_at_every_trigger_and_replaces_the_documents(gen):
    rec = Recording(gen)
    pred = Dragin(WordOverlapRetriever(CORPUS), rec, _cfg(theta=-1.0, max_new_tokens=10, top_n=4)).run_batch(
        [EXAMPLE]
    )[0]
    steps = [s for s in pred.trace["steps"] if s["kind"] == "generate"]
    answer_prompts = [p[0] for p, kw in rec.calls if kw.get("want_attention")]
    assert len(answer_prompts) == len(steps)
    # theta < 0: every round triggers (at its first checkable token) until the length is used up.
    triggered = [s for s in steps if s["triggered"]]
    assert len(triggered) == pred.counters["retrieval_steps"] >= 3
    assert _docs_in(answer_prompts[0]) == []
    for k, s in enumerate(triggered):
        if k + 1 < len(answer_prompts):
            # The next generation sees exactly this retrieval's documents, none of the earlier ones.
            assert _docs_in(answer_prompts[k + 1]) == s["new_doc_ids"] == steps[k + 1]["doc_ids"]
    # The first round may keep nothing; every later one keeps at least its first word.
    assert all(s["kept_tokens"] >= 1 for s in triggered[1:])
    assert pred.counters["answer_tokens"] <= 10
    assert pred.counters["attention_passes"] == len(answer_prompts)


def test_no_trigger_means_one_generation_and_no_retrieval(gen):
    pred = Dragin(WordOverlapRetriever(CORPUS), gen, _cfg(theta=1e9)).run_batch([EXAMPLE])[0]
    assert "retrieval_steps" not in pred.counters and pred.chunks == []
    assert pred.counters["answer_calls"] == 1


def test_official_variant_drops_the_sentence_and_regenerates_with_documents(gen):
    rec = Recording(gen)
    cfg = _cfg(variant="official", theta=-1.0, max_new_tokens=12, top_n=3)
    pred = Dragin(WordOverlapRetriever(CORPUS), rec, cfg).run_batch([EXAMPLE])[0]
    steps = [s for s in pred.trace["steps"] if s["kind"] == "generate"]
    assert steps and all(s["triggered"] for s in steps)
    answers = [p[0] for p, kw in rec.calls if kw.get("want_entropies")]
    regens = [
        p[0] for p, kw in rec.calls if not kw.get("want_entropies") and not p[0].endswith("So the answer is")
    ]
    # Generations that are scored never see documents; each regeneration sees its retrieval's.
    assert all(_docs_in(p) == [] for p in answers)
    assert [_docs_in(p) for p in regens] == [s["doc_ids"] for s in steps if "regenerated" in s]
    # Two attention passes per triggered round: one over the new text, one over question + text.
    assert pred.counters["attention_passes"] == 2 * len(steps)
    assert rec.attended[1].startswith(QUESTION)
    for s in steps:
        assert len(s["query"].split()) <= 3


def test_official_rind_and_qfs_by_hand():
    # Two heads, three tokens; max over queries (diagonal included), then mean over heads.
    per_head = np.array(
        [
            [[1.0, 0.0, 0.0], [0.6, 0.4, 0.0], [0.2, 0.3, 0.5]],
            [[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.1, 0.8, 0.1]],
        ]
    )
    assert np.allclose(token_influence_official(per_head), [1.0, (0.4 + 0.8) / 2, (0.5 + 0.1) / 2])
    # Sentence [0, 1] and sentence [2]: attention normalised per sentence, times entropy and length.
    scores = sentence_scores_official([1.0, 3.0, 2.0], [2.0, 1.0, 0.5], [range(0, 2), range(2, 3)])
    assert np.allclose(scores, [0.25 * 2.0 * 2, 0.75 * 1.0 * 2, 1.0 * 0.5 * 1])

    # Four positions: BOS, then words w0 = [1], w1 = [2, 3]. Row k-1 predicts token k.
    w = np.array(
        [
            [1.0, 0.0, 0.0, 0.0],
            [0.5, 0.5, 0.0, 0.0],
            [0.2, 0.2, 0.6, 0.0],
            [0.1, 0.3, 0.2, 0.4],
        ]
    )
    wa = official_word_attention(w, [[1], [2, 3]])
    # w1 (tokens 2, 3, start 2): rows 1 and 2 over keys < 2, each normalised: [0.5, 0.5] and [0.5, 0.5];
    # summed, divided by 2 tokens -> [0.5, 0.5]; per word: w0 gets position 1 -> 0.5, w1 gets nothing.
    assert np.allclose(wa[1], [0.5, 0.0])
    # w0 (token 1, start 1): row 0 over key 0 -> [1.0]; BOS belongs to no word.
    assert np.allclose(wa[0], [0.0, 0.0])
    # QFS: the hit word's row ranks the other content words; the hit itself is never kept.
    wa3 = np.array([[0, 0, 0], [0, 0, 0], [0.2, 0.7, 0]])
    assert qfs_official(wa3, [2], [True, True, True], 1) == [1]
    assert qfs_official(wa3, [2], [True, False, True], 1) == [0]
    assert qfs_official(wa3, [2], [True, True, True], 5) == [0, 1]


def test_dragin_needs_a_local_model():
    from efficientrag.llm.config import LLMConfig
    from efficientrag.llm.generator_config import OpenAIGeneratorConfig
    from efficientrag.llm.openai_generator import OpenAIGenerator

    llm = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key="k")
    with (
        OpenAIGenerator(OpenAIGeneratorConfig(llm=llm)) as api,
        pytest.raises(GeneratorCapabilityError, match="dragin needs per-token entropies and attention"),
    ):
        Dragin(WordOverlapRetriever(CORPUS), api, _cfg())
