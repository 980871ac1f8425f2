"""The shared pieces of the active RAG methods: sentences, queries, prompts, exemplars, the driver."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from efficientrag.baselines.active.loop import Generate, Retrieve, Session, clip_generation, drive
from efficientrag.baselines.active.queries import (
    QueryTrimmer,
    interleave,
    low_spans,
    masked_query,
)
from efficientrag.baselines.active.sentences import (
    answer_sentence_end,
    first_sentence_end,
    sentence_spans,
    tokens_before,
    tokens_through,
)
from efficientrag.baselines.config import BaselinesConfig
from efficientrag.baselines.dragin import DraginConfig
from efficientrag.baselines.flare import FlareConfig, flare_triggers
from efficientrag.baselines.prompts.continuation import DOC_INSTRUCTION, InstructPromptBuilder, PromptBuilder
from efficientrag.baselines.prompts.cot_exemplars import EXEMPLAR_SETS, SEARCH_EXEMPLARS, exemplar_set, take
from efficientrag.config import load_config
from efficientrag.data.schema import Chunk, Example
from efficientrag.errors import ConfigError
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.llm.answers import extract_answer
from efficientrag.retrieval.base import Hit

# -- sentences ---------------------------------------------------------------------------------------


def test_sentence_spans_skip_leading_space_and_keep_abbreviations():
    text = " The film was shot in St. Louis in 1980. He died in the U.S. later.\nSo the answer is X."
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == [
        "The film was shot in St. Louis in 1980.",
        "He died in the U.S. later.",
        "So the answer is X.",
    ]


@pytest.mark.parametrize(
    ("text", "end"),
    [
        (" Bob was born in Paris. He", 23),  # a second sentence begins: the first is complete
        (" Bob was born in Paris.", 23),  # ends in final punctuation
        (" Bob was born in", None),  # unfinished single sentence
        ("", None),
    ],
)
def test_first_sentence_end(text, end):
    assert first_sentence_end(text) == end


def test_token_counts_at_a_character():
    pieces = [" Bob", " was", " born", ".", " He", " died"]
    assert tokens_through(pieces, 14) == 4  # " Bob was born." is 14 characters
    assert tokens_through(pieces, 13) == 3
    assert tokens_through(pieces, 12) == 3  # a straddling piece is kept whole
    assert tokens_before(pieces, 16) == 4  # " He" starts at 14 and ends at 17
    assert tokens_before(pieces, 17) == 5


def test_answer_sentence_end_waits_for_a_complete_sentence():
    assert answer_sentence_end(" X is Y. So the answer is Paris. Question: more", False) == 32
    assert answer_sentence_end(" So the answer is Paris.", False) == 24
    assert answer_sentence_end(" So the answer is Par", False) is None
    assert answer_sentence_end(" So the answer is Par", True) == 21
    assert answer_sentence_end(" no answer here.", True) is None


# -- FLARE's trigger and queries ----------------------------------------------------------------------


def test_trigger_rules_and_inclusive_comparison():
    assert flare_triggers([0.9, 0.79, 0.95], 0.8)
    assert not flare_triggers([0.9, 0.8, 0.95], 0.8)  # the paper: p < theta
    assert flare_triggers([0.9, 0.8, 0.95], 0.8, inclusive=True)  # the code: p <= theta
    # DRAGIN's sentence rule: mean of 1 - p, not the minimum.
    probs = [0.5, 1.0, 1.0, 1.0]  # mean(1 - p) = 0.125
    assert flare_triggers(probs, 0.1, "mean_one_minus_p")
    assert not flare_triggers(probs, 0.2, "mean_one_minus_p")
    assert not flare_triggers([], 0.8)


def test_masked_query_deletes_exactly_the_tokens_below_beta():
    pieces = [" Joe", " Biden", " attended", " the", " University", " of", " Pennsylvania", ","]
    probs = [0.9, 0.95, 0.7, 0.3, 0.2, 0.39, 0.1, 0.4]
    assert masked_query(pieces, probs, 0.4) == "Joe Biden attended,"
    assert masked_query(pieces, probs, 0.4, inclusive=True) == "Joe Biden attended"


def test_low_spans_merge_runs_and_widen_to_words():
    pieces = [" Bob", " was", " born", " in", " Penn", "sylv", "ania", " in", " 19", "50", "."]
    probs = [0.9, 0.9, 0.9, 0.9, 0.9, 0.2, 0.9, 0.9, 0.3, 0.9, 0.9]
    spans = low_spans(pieces, probs, 0.4)
    assert ["".join(pieces[a:b]).strip() for a, b in spans] == ["Pennsylvania", "1950"]
    # With a gap of 2 tokens the two runs become one span.
    merged = low_spans(pieces, probs, 0.4, gap=2)
    assert ["".join(pieces[a:b]).strip() for a, b in merged] == ["Pennsylvania in 1950"]


def _hit(i):
    return Hit(Chunk(i, "", i), 1.0)


def test_interleave_merges_by_rank_without_duplicates():
    a = [_hit("a1"), _hit("a2"), _hit("s")]
    b = [_hit("b1"), _hit("s"), _hit("b3")]
    assert [h.id for h in interleave([a, b], 5)] == ["a1", "b1", "a2", "s", "b3"]
    assert [h.id for h in interleave([a, b], 2)] == ["a1", "b1"]


def test_query_trimmer_keeps_the_last_tokens():
    assert QueryTrimmer(None)("a b c d") == "a b c d"
    assert QueryTrimmer(2)("a b c d") == "c d"


# -- prompts and exemplars ----------------------------------------------------------------------------


def test_every_exemplar_set_has_eight_answers_in_the_cot_format():
    for name, exemplars in EXEMPLAR_SETS.items():
        assert len(exemplars) == 8, name
        for ex in exemplars:
            assert extract_answer(ex.answer, "so_the_answer_is"), ex.question
            assert ex.answer.rstrip().endswith(".")
    assert all("[Search(" in ex.answer for ex in SEARCH_EXEMPLARS)
    assert exemplar_set("auto", "2wikimultihopqa") is EXEMPLAR_SETS["2wikimultihopqa"]
    assert exemplar_set("auto", "jsonl") is EXEMPLAR_SETS["hotpotqa"]
    with pytest.raises(ValueError, match="only 8"):
        take(EXEMPLAR_SETS["toy"], 9)


def test_prompt_layout_with_and_without_documents():
    builder = PromptBuilder(take(EXEMPLAR_SETS["toy"], 2), max_doc_words=3)
    bare = builder.render("Who  wrote X?", answer=" It was")
    assert "Context:" not in bare.text and DOC_INSTRUCTION not in bare.text
    assert bare.text.endswith("Question: Who wrote X?\nAnswer: It was")
    assert bare.text[slice(*bare.question_span)] == "Who wrote X?"
    assert bare.text[bare.answer_start :] == " It was"
    assert bare.text.count("\n\n") == 2  # after each exemplar

    docs = [Chunk("a", "Alpha", "one two three four"), Chunk("b", "", "five\nsix")]
    with_docs = builder.render("Who wrote X?", docs)
    tail = with_docs.text[len(builder._head) :]
    assert tail == (
        f"Context:\n[1] Alpha: one two\n[2] five six\n{DOC_INSTRUCTION}\nQuestion: Who wrote X?\nAnswer:"
    )
    assert with_docs.text[slice(*with_docs.question_span)] == "Who wrote X?"


def test_exemplar_documents_and_instruct_prompt():
    exemplars = take(EXEMPLAR_SETS["toy"], 2)
    builder = PromptBuilder(exemplars, exemplar_docs=[[Chunk("d", "D", "doc text")], []])
    text = builder.render("Q?").text
    assert text.startswith("Context:\n[1] D: doc text\nQuestion: " + exemplars[0].question)
    instruct = InstructPromptBuilder(exemplars).render("Q?", answer=" [x").text
    assert "[Search(term)]" in instruct and SEARCH_EXEMPLARS[0].answer in instruct
    assert instruct.endswith("Question: Q?\nAnswer (step by step, with search): [x")


# -- config ---------------------------------------------------------------------------------------------


def test_config_defaults_are_the_papers_and_validation_names_the_field():
    cfg = BaselinesConfig()
    assert (cfg.flare.theta, cfg.flare.beta, cfg.flare.top_k, cfg.flare.num_exemplars) == (0.8, 0.4, 2, 8)
    assert (cfg.flare.look_ahead, cfg.flare.max_new_tokens, cfg.flare.query) == (64, 256, "masked")
    assert (cfg.dragin.variant, cfg.dragin.top_k) == ("paper", 3)
    with pytest.raises(ValueError, match="theta"):
        FlareConfig(theta=1.5)
    with pytest.raises(ValueError, match="top_n"):
        DraginConfig(top_n=0)
    with pytest.raises(ConfigError, match="variant"):
        load_config(ExperimentConfig, overrides=["baselines.dragin.variant=paperish"])


PRESETS = sorted((Path(__file__).resolve().parents[2] / "configs" / "paper").glob("*/*.yaml"))
PRESETS = [p for p in PRESETS if p.parent.name in ("flare", "dragin") and not p.name.startswith("_")]


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_paper_presets_load(path):
    cfg = load_config(ExperimentConfig, path)
    if path.parent.name == "dragin":
        assert cfg.retriever.kind == "bm25"
        assert cfg.baselines.dragin.top_k == 3 and cfg.baselines.sr_rag.top_k == 3
        assert cfg.baselines.wo_rag.max_new_tokens == cfg.baselines.dragin.max_new_tokens
        assert cfg.generator.backend == "hf"
    else:
        assert (cfg.baselines.flare.theta, cfg.baselines.flare.beta, cfg.baselines.flare.top_k) == (
            0.8,
            0.4,
            2,
        )


def test_dragin_presets_cover_table_9():
    names = {p.stem for p in PRESETS if p.parent.name == "dragin"}
    models = ("llama2-13b-chat", "llama2-7b-chat", "vicuna-13b-v1.5")
    datasets = ("2wikimultihopqa", "hotpotqa", "iirc", "strategyqa")
    assert names == {f"{m}_{d}" for m in models for d in datasets}


# -- the driver -------------------------------------------------------------------------------------------


class _CountingGenerator:
    """Echoes a fixed continuation per prompt; records the calls it got."""

    name = "counting"

    def __init__(self):
        from efficientrag.llm.generator import GeneratorCounters, GeneratorSupport

        self.supports = GeneratorSupport(True, False, True, False, True)
        self.counters = GeneratorCounters()
        self.calls = []

    def generate(self, prompts, *, max_new_tokens, stop=None, temperature=0.0, **flags):
        from efficientrag.llm.generator import Generation

        self.calls.append((list(prompts), max_new_tokens, flags))
        out = []
        for p in prompts:
            tokens = [f" {p}{i}" for i in range(max_new_tokens)]
            out.append(
                Generation("".join(tokens), "length", 1, max_new_tokens, tokens, list(range(max_new_tokens)))
            )
        return out


class _Retriever:
    def __init__(self):
        self.calls = []

    def search(self, queries, k):
        self.calls.append((list(queries), k))
        return [[_hit(f"{q}-{r}") for r in range(k)] for q in queries]


def test_drive_batches_requests_and_books_costs_per_question():
    def program(s, budget):
        hits = yield Retrieve((s.question, s.question + "?"), 2)
        s.hold(hits[1])
        g = yield Generate(s.question, budget)
        s.accept(g.tokens)
        pair = yield [Generate(s.question + "!", 1, kind="question"), Retrieve(("x",), 1)]
        s.log(pair=[pair[0].text, pair[1][0][0].id])

    sessions = [Session(Example(f"q{i}", f"p{i}", [], [])) for i in range(3)]
    gen, ret = _CountingGenerator(), _Retriever()
    drive(
        [program(s, b) for s, b in zip(sessions, (3, 1, 2), strict=True)],
        sessions,
        gen,
        ret,
        merge_budgets=True,
    )
    # One retrieval call for the first round (6 queries), one generate call with the largest budget.
    assert ret.calls[0] == (["p0", "p0?", "p1", "p1?", "p2", "p2?"], 2)
    assert gen.calls[0][1] == 3 and len(gen.calls[0][0]) == 3
    assert [s.answer_tokens for s in sessions] == [3, 1, 2]  # cut back to each budget
    assert sessions[1].answer == " p10"
    assert [d.id for d in sessions[2].docs] == ["p2?-0", "p2?-1"]
    c = sessions[0].counters
    assert (c["llm_calls"], c["answer_calls"], c["question_calls"], c["completion_tokens"]) == (2, 1, 1, 4)
    assert (c["retrieval_steps"], c["retrieval_calls"]) == (2, 3)
    assert sessions[0].steps[0]["pair"] == [" p0!0", "x-0"]

    # Without merging, different budgets are separate calls.
    gen2 = _CountingGenerator()
    sessions = [Session(Example(f"q{i}", f"p{i}", [], [])) for i in range(3)]
    drive([program(s, b) for s, b in zip(sessions, (3, 1, 3), strict=True)], sessions, gen2, _Retriever())
    assert sorted(len(c[0]) for c in gen2.calls[:2]) == [1, 2]


def test_clip_generation_cuts_tokens_probabilities_and_attention():
    from efficientrag.llm.generator import AttentionView, Generation

    w = np.tril(np.ones((5, 5)))
    w /= w.sum(1, keepdims=True)
    view = AttentionView(
        w, [0, 1, 2, 3, 4], ["P", "p", "a", "b", "c"], [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], "Ppabc", 2
    )
    g = Generation("abc", "stop", 2, 4, ["a", "b", "c"], [2, 3, 4], [0.1, 0.2, 0.3], [1.0, 2.0, 3.0], view)
    cut = clip_generation(g, 2)
    assert (cut.text, cut.finish_reason, cut.completion_tokens) == ("ab", "length", 2)
    assert cut.token_probs == [0.1, 0.2] and cut.entropies == [1.0, 2.0]
    assert cut.attention.weights.shape == (4, 4) and cut.attention.text == "Ppab"
    assert math.isclose(cut.attention.weights[3, 0], 0.25)
    assert clip_generation(g, 3) is g
