"""Every answering method end to end on the toy world against the fake OpenAI server.

The scripted "model" answers by prompt kind and makes each method take its branches; every reply
carries fixed token counts per kind, so the per-question counters can be asserted exactly.
"""

import json
import re
import threading
from collections import Counter
from dataclasses import dataclass

import pytest

from efficientrag.baselines.config import JudgeConfig
from efficientrag.baselines.judge import INSTRUCTION as JUDGE_INSTRUCTION
from efficientrag.baselines.prompts import instructions as ins
from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.loader import load_data
from efficientrag.eval.runner import run_method
from efficientrag.experiment.assembly import build_method, shared_settings
from efficientrag.experiment.config import EvalSettings, ExperimentConfig
from efficientrag.jsonl import read_jsonl
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.generator_config import OpenAIGeneratorConfig
from efficientrag.llm.openai_generator import OpenAIGenerator
from efficientrag.testing.fake_completions import ScriptedReply, prompt_token_count, request_text, tokenize
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.word_overlap import WordOverlapRetriever
from efficientrag.text.normalize import normalize_answer

STOP = ["the", "of", "is", "was", "a", "in", "by", "who", "what", "which", "or", "and"]
# (prompt tokens, completion tokens) the fake reports for each prompt kind.
COST = {
    "direct": (101, 3),
    "cot": (102, 4),
    "decompose": (103, 5),
    "answer": (104, 6),
    "iter": (105, 7),
    "step": (106, 8),
    "final": (107, 9),
    "judge": (50, 2),
}
TARGET = re.compile(r"Question: ([^\n]*)\nAnswer:\s*$")
SELF_ASK_TARGET = re.compile(r"Question: ([^\n]*)\nAre follow up questions needed here:")


@dataclass
class World:
    corpus: object
    examples: list

    def titles(self, ex):
        return [self.corpus.get(cid).title for cid in ex.gold_chunk_ids]


class ScriptedModel:
    """Replies per prompt kind; ``self_ask`` maps a question to its Self-Ask behaviour."""

    def __init__(self, world: World, self_ask: dict[str, str] | None = None, garbled_decomposition=()):
        self.world = world
        self.by_question = {ex.question: ex for ex in world.examples}
        self.self_ask = self_ask or {}
        self.garbled = set(garbled_decomposition)
        self.iter_counts: Counter = Counter()
        self.lock = threading.Lock()

    def reply(self, kind, text):
        p, c = COST[kind]
        return ScriptedReply(text, prompt_tokens=p, completion_tokens=c)

    def follow_up(self, ex, k):
        return f"Who or what is {self.world.titles(ex)[k]}?"

    def __call__(self, request):
        text = request_text(request)
        if "messages" not in request:
            return self.self_ask_step(text)
        if text.startswith(JUDGE_INSTRUCTION):
            pred = re.search(r"Predicted answer: (.*)\nYour verdict:", text).group(1)
            refs = re.search(r"Reference answer\(s\): (.*)\n", text).group(1).split(" | ")
            if pred == "undecidable":
                return self.reply("judge", "maybe")
            ok = normalize_answer(pred) in {normalize_answer(r) for r in refs}
            return self.reply("judge", '```json\n{"response": "%s"}\n```' % ("yes" if ok else "no"))
        question = TARGET.search(text).group(1)
        ex = self.by_question.get(question)
        if text.startswith(ins.DIRECT):
            return self.reply("direct", _json({"answer": ex.answers[0]}))
        if text.startswith(ins.COT):
            return self.reply("cot", '{"thought": "I recall it.", "answer": "undecidable"}')
        if text.startswith(ins.DECOMPOSE):
            if question in self.garbled:
                return self.reply("decompose", "I cannot split this question.")
            subs = [self.follow_up(ex, 0), self.follow_up(ex, 1), self.follow_up(ex, 0)]
            return self.reply("decompose", f"```json\n{_json({'decomposed_questions': subs})}\n```")
        if text.startswith(ins.RETRIEVAL_ANSWER):
            if ex is not None:
                return self.reply("answer", _json({"answer": ex.answers[0]}))
            entity = re.match(r"Who or what is (.*)\?$", question).group(1)
            return self.reply("answer", _json({"answer": entity}))
        if text.startswith(ins.ITER_RETGEN):
            with self.lock:
                self.iter_counts[question] += 1
                k = self.iter_counts[question]
            titles = self.world.titles(ex)
            answer = ex.answers[0] if k == 3 else f"guess {k}"
            thought = f"Step {k} mentions {titles[(k - 1) % len(titles)]}."
            return self.reply("iter", _json({"thought": thought, "answer": answer}))
        raise AssertionError(f"unexpected prompt: {text[:80]!r}")

    def self_ask_step(self, text):
        if text.rstrip().endswith(ins.FINAL):
            return self.reply("final", " forced answer")
        question = SELF_ASK_TARGET.findall(text)[-1]
        ex = self.by_question[question]
        tail = text[text.rfind(f"Question: {question}") :]
        done = tail.count(ins.INTERMEDIATE)
        behaviour = self.self_ask.get(question, "normal")
        if behaviour == "no_follow_up":
            return self.reply("step", " No.")
        if behaviour == "endless":
            title = self.world.titles(ex)[done % 2]
            return self.reply("step", f"\nFollow up: Who or what is {title} in round {done}?")
        if done < 2:
            lead = " Yes.\n" if done == 0 else ""
            overrun = (
                "\nIntermediate answer: something invented\nSo the final answer is: wrong"
                if behaviour == "overrun"
                else ""
            )
            return self.reply("step", f"{lead}Follow up: {self.follow_up(ex, done)}{overrun}")
        return self.reply("step", f"So the final answer is: {ex.answers[0]}\n\nQuestion: next one")


def _json(obj):
    return json.dumps(obj)


@pytest.fixture(scope="module")
def world():
    pooled = load_data(DataConfig(dataset="toy", toy=ToyWorldConfig(num_questions=4, seed=3)))
    examples = [ex for ex in pooled.examples if len(ex.gold_chunk_ids) >= 2][:4]
    assert len(examples) == 4
    return World(pooled.corpus, examples)


def _generator(srv, model="gen-model"):
    cfg = OpenAIGeneratorConfig(
        llm=LLMConfig(base_url=srv.base_url, model=model, api_key="test-key", max_retries=0)
    )
    return OpenAIGenerator(cfg)


def _cfg(srv=None, **baselines):
    cfg = ExperimentConfig(eval=EvalSettings(ks=[2, 5, 20]))
    for key, value in baselines.items():
        section, field = key.split("__")
        setattr(getattr(cfg.baselines, section), field, value)
    return cfg


def _run(method, world, tmp_path, batch_size=4):
    summary = run_method(
        method, world.examples, tmp_path, ks=[2, 5, 20], batch_size=batch_size, progress=False
    )
    records = {r["id"]: r for r in read_jsonl(tmp_path / "predictions.jsonl")}
    return summary, records


def _cost(*kinds):
    return sum(COST[k][0] for k in kinds), sum(COST[k][1] for k in kinds)


def test_direct_and_cot_answer_in_one_call_with_exact_counters(world, tmp_path):
    with FakeOpenAIServer(ScriptedModel(world)) as srv:
        gen = _generator(srv)
        retriever = WordOverlapRetriever(world.corpus, STOP)
        direct = build_method("direct", _cfg(), retriever, lambda: gen)
        summary, records = _run(direct, world, tmp_path / "direct")
        cot = build_method("CoT", _cfg(), retriever, lambda: gen)
        cot_summary, cot_records = _run(cot, world, tmp_path / "cot")
        assert srv.total_requests == 8
    assert retriever.queries == []
    for ex in world.examples:
        r = records[ex.id]
        assert r["answer"] == ex.answers[0]
        assert r["qa"] == {"em": 1.0, "f1": 1.0, "contained": 1.0}
        assert r["counters"]["llm_calls"] == 1
        assert (r["counters"]["prompt_tokens"], r["counters"]["completion_tokens"]) == _cost("direct")
        assert r["retrieved_ids"] == [] and "retrieval" not in r
        c = cot_records[ex.id]
        assert c["answer"] == "undecidable" and c["trace"]["thought"] == "I recall it."
        assert c["qa"]["em"] == 0.0
        assert (c["counters"]["prompt_tokens"], c["counters"]["completion_tokens"]) == _cost("cot")
    assert summary["qa"]["em"] == 100.0 and cot_summary["qa"]["f1"] == 0.0
    assert summary["counters_mean"]["llm_calls"] == 1.0


def test_token_counts_are_the_servers_own_usage(world, tmp_path):
    """Without scripted counts, each question's tokens are what the server reported for its request."""
    replies = {ex.question: f'{{"answer": "{ex.answers[0]} indeed"}}' for ex in world.examples}

    def respond(request):
        return replies[TARGET.search(request_text(request)).group(1)]

    with FakeOpenAIServer(respond) as srv:
        gen = _generator(srv)
        method = build_method("direct", _cfg(), WordOverlapRetriever(world.corpus, STOP), lambda: gen)
        _, records = _run(method, world, tmp_path)
        bodies = srv.request_bodies("chat")
    for ex in world.examples:
        (body,) = [b for b in bodies if f"Question: {ex.question}\nAnswer:" in b["messages"][-1]["content"]]
        counters = records[ex.id]["counters"]
        assert counters["prompt_tokens"] == prompt_token_count(body)
        assert counters["completion_tokens"] == len(tokenize(replies[ex.question]))
        assert records[ex.id]["qa"]["em"] == 0.0 and records[ex.id]["qa"]["contained"] == 0.0


def test_decompose_r_retrieves_once_per_sub_question(world, tmp_path):
    garbled = world.examples[1].question
    with FakeOpenAIServer(ScriptedModel(world, garbled_decomposition=[garbled])) as srv:
        gen = _generator(srv)
        retriever = WordOverlapRetriever(world.corpus, STOP)
        method = build_method("decompose-r", _cfg(decompose_r__top_k=3), retriever, lambda: gen)
        summary, records = _run(method, world, tmp_path)
        answer_prompts = [
            b["messages"][0]["content"]
            for b in srv.request_bodies("chat")
            if b["messages"][0]["content"].startswith(ins.RETRIEVAL_ANSWER)
        ]
    for ex in world.examples:
        r = records[ex.id]
        titles = world.titles(ex)
        if ex.question == garbled:
            expected = [ex.question]
            assert r["counters"]["decompose_failures"] == 1
        else:
            # The duplicate sub-question was dropped.
            expected = [f"Who or what is {titles[0]}?", f"Who or what is {titles[1]}?"]
        assert r["trace"]["decomposition"]["sub_questions"] == expected
        assert [x["query"] for x in r["trace"]["retrievals"]] == expected
        assert r["counters"]["retrieval_calls"] == len(expected)
        assert r["counters"]["llm_calls"] == 2
        assert (r["counters"]["prompt_tokens"], r["counters"]["completion_tokens"]) == _cost(
            "decompose", "answer"
        )
        assert len(r["retrieved_ids"]) == 3 * len(expected)
        context = r["trace"]["context_ids"]
        assert context == list(dict.fromkeys(r["retrieved_ids"]))
        (prompt,) = [p for p in answer_prompts if p.rstrip().endswith(f"Question: {ex.question}\nAnswer:")]
        for cid in context:
            assert world.corpus.get(cid).text.split(".")[0] in prompt
        assert r["answer"] == ex.answers[0]
    assert sorted(retriever.queries) == sorted(
        q for r in records.values() for q in r["trace"]["decomposition"]["sub_questions"]
    )
    assert summary["retrieval"]["all"]["num_chunks_with_dups"] == pytest.approx(3 * 7 / 4)


def test_iter_retgen_feeds_each_generation_into_the_next_query(world, tmp_path):
    with FakeOpenAIServer(ScriptedModel(world)) as srv:
        gen = _generator(srv)
        retriever = WordOverlapRetriever(world.corpus, STOP)
        cfg = _cfg(iter_retgen__top_k=4, iter_retgen__iterations=3)
        method = build_method("iter-retgen", cfg, retriever, lambda: gen)
        summary, records = _run(method, world, tmp_path)
        assert srv.total_requests == 12
    for ex in world.examples:
        r = records[ex.id]
        titles = world.titles(ex)
        queries = [it["query"] for it in r["trace"]["iterations"]]
        assert queries == [
            ex.question,
            f"{ex.question} Step 1 mentions {titles[0]}.",
            f"{ex.question} Step 2 mentions {titles[1 % len(titles)]}.",
        ]
        assert [it["answer"] for it in r["trace"]["iterations"]] == ["guess 1", "guess 2", ex.answers[0]]
        assert r["counters"]["llm_calls"] == 3 and r["counters"]["retrieval_calls"] == 3
        assert (r["counters"]["prompt_tokens"], r["counters"]["completion_tokens"]) == _cost(
            "iter", "iter", "iter"
        )
        assert len(r["retrieved_ids"]) == 12
        its = r["trace"]["iterations"]
        assert r["views"]["iter2"]["qa"]["em"] == 0.0 and r["qa"]["em"] == 1.0
        assert r["trace"]["views"]["iter1"]["chunk_ids"] == its[0]["ids"]
        assert r["trace"]["views"]["last_iteration"]["chunk_ids"] == its[2]["ids"]
        assert r["views"]["iter2"]["retrieval"]["num_chunks_with_dups"] == 8
    assert set(summary["views"]) == {"iter1", "iter2", "last_iteration"}
    assert summary["views"]["iter2"]["qa"]["em"] == 0.0 and summary["qa"]["em"] == 100.0
    assert "iter_retgen[iter2]" in (tmp_path / "table.md").read_text()


def test_self_ask_follow_ups_intermediate_answers_and_forced_finals(world, tmp_path):
    exs = world.examples
    behaviours = {
        exs[0].question: "normal",
        exs[1].question: "endless",
        exs[2].question: "no_follow_up",
        exs[3].question: "overrun",
    }
    with FakeOpenAIServer(ScriptedModel(world, self_ask=behaviours)) as srv:
        gen = _generator(srv)
        retriever = WordOverlapRetriever(world.corpus, STOP)
        cfg = _cfg(self_ask__top_k=3, self_ask__max_follow_ups=2)
        method = build_method("self_ask", cfg, retriever, lambda: gen)
        summary, records = _run(method, world, tmp_path)
        total = srv.total_requests
        completions = srv.requests_by_endpoint["completions"]
    normal, endless, silent, overrun = (records[ex.id] for ex in exs)
    for r, ex in ((normal, exs[0]), (overrun, exs[3])):
        titles = world.titles(ex)
        assert [f["question"] for f in r["trace"]["follow_ups"]] == [
            f"Who or what is {t}?" for t in titles[:2]
        ]
        assert [f["answer"] for f in r["trace"]["follow_ups"]] == titles[:2]
        assert r["answer"] == ex.answers[0] and not r["trace"]["forced_final"]
        assert r["counters"]["llm_calls"] == 5 and r["counters"]["retrieval_calls"] == 2
        assert (r["counters"]["prompt_tokens"], r["counters"]["completion_tokens"]) == _cost(
            "step", "step", "step", "answer", "answer"
        )
        assert f"Intermediate answer: {titles[0]}\n" in r["trace"]["scratchpad"]
        assert "invented" not in r["trace"]["scratchpad"]  # cut by the stop sequence
        assert len(r["retrieved_ids"]) == 6
    # Asked a third follow-up past the limit: it is dropped and the final answer forced.
    assert endless["trace"]["forced_final"] and endless["answer"] == "forced answer"
    assert len(endless["trace"]["follow_ups"]) == 2 and "in round 2" not in endless["trace"]["scratchpad"]
    assert endless["counters"]["llm_calls"] == 6 and endless["counters"]["retrieval_calls"] == 2
    assert (endless["counters"]["prompt_tokens"], endless["counters"]["completion_tokens"]) == _cost(
        "step", "step", "step", "answer", "answer", "final"
    )
    assert silent["counters"]["llm_calls"] == 2 and silent["counters"].get("retrieval_calls", 0) == 0
    assert silent["retrieved_ids"] == [] and silent["answer"] == "forced answer"
    assert silent["trace"]["scratchpad"].endswith("No.\nSo the final answer is: forced answer")
    assert total == 5 + 6 + 2 + 5 and completions == 3 + 4 + 2 + 3
    assert summary["counters_mean"]["llm_calls"] == pytest.approx(18 / 4)


def test_direct_r_and_efficientrag_answer_through_one_wrapper(world, tmp_path):
    from efficientrag.baselines.efficientrag import EfficientRAGRetrieval
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.text.words import split_words

    with FakeOpenAIServer(ScriptedModel(world)) as srv:
        gen = _generator(srv)
        retriever = WordOverlapRetriever(world.corpus, STOP)
        cfg = _cfg()
        cfg.eval.answer = True
        direct_r = build_method("Direct-R", cfg, retriever, lambda: gen)
        assert direct_r.name == "direct_r_qa"
        summary, records = _run(direct_r, world, tmp_path / "direct_r")

        gold_titles = {world.corpus.get(c).title for ex in world.examples for c in ex.gold_chunk_ids}
        rag = EfficientRAG(retriever, _TitleLabeler(gold_titles, split_words), _SilentFilter())
        answering = EfficientRAGConfig(answer_top_k=None, answer_max_new_tokens=32)
        method = EfficientRAGRetrieval(
            retriever, lambda: gen, answering, shared=shared_settings(cfg), rag=rag
        )
        _, rag_records = _run(method, world, tmp_path / "efficientrag")
        assert srv.total_requests == 8
    for ex in world.examples:
        r = records[ex.id]
        assert len(r["retrieved_ids"]) == 20 and set(r["retrieval"]) == {"2", "5", "20"}
        assert r["trace"]["answer_call"]["context_ids"] == r["retrieved_ids"][:10]
        assert r["answer"] == ex.answers[0] and r["qa"]["em"] == 1.0
        assert r["counters"]["llm_calls"] == 1 and r["counters"]["retrieval_calls"] == 1
        e = rag_records[ex.id]
        assert e["retrieved_ids"] and e["trace"]["answer_call"]["context_ids"] == e["retrieved_ids"]
        assert all(world.corpus.get(c).title in gold_titles for c in e["retrieved_ids"])
        assert e["counters"]["llm_calls"] == 1 and e["counters"]["prompt_tokens"] == COST["answer"][0]
    assert summary["method"] == "direct_r_qa" and summary["qa"]["em"] == 100.0


def test_judge_adds_acc_to_answers_and_views(world, tmp_path):
    with FakeOpenAIServer(ScriptedModel(world)) as srv:
        gen = _generator(srv)
        cfg = _cfg(iter_retgen__top_k=2)
        cfg.baselines.judge = JudgeConfig(
            enabled=True,
            llm=LLMConfig(base_url=srv.base_url, model="judge-model", api_key="k", max_retries=0),
        )
        retriever = WordOverlapRetriever(world.corpus, STOP)
        iter_method = build_method("iter_retgen", cfg, retriever, lambda: gen)
        summary, records = _run(iter_method, world, tmp_path / "iter")
        judge_bodies = [b for b in srv.request_bodies("chat") if b["model"] == "judge-model"]
        cot = build_method("cot", cfg, retriever, lambda: gen)
        cot_summary, cot_records = _run(cot, world, tmp_path / "cot")
    # Per question: final answer (correct) + iter1 ("guess 1") + iter2 ("guess 2"); last_iteration
    # repeats the final answer and is not asked twice.
    assert len(judge_bodies) == 4 * 3
    for ex in world.examples:
        r = records[ex.id]
        assert r["qa"]["acc"] == 1.0 and r["views"]["iter1"]["qa"]["acc"] == 0.0
        assert r["trace"]["judge"]["model"] == "judge-model"
        assert r["counters"]["llm_calls"] == 3  # judge calls are evaluation, not the method's cost
        assert cot_records[ex.id]["qa"]["acc"] == 0.0 and cot_records[ex.id]["qa"]["judge_failed"] == 1.0
    assert summary["qa"]["acc"] == 100.0 and summary["views"]["iter2"]["qa"]["acc"] == 0.0
    assert cot_summary["qa"]["judge_failures"] == 4


@dataclass
class _P:
    continue_prob: float
    word_probs: list


class _TitleLabeler:
    """Continue for chunks whose title is one of ``titles``; labels no words."""

    def __init__(self, titles, split_words):
        self.titles = [split_words(t) for t in titles]

    def predict(self, pairs, **kw):
        out = []
        for _, chunk_words in pairs:
            keep = any(chunk_words[: len(t)] == t for t in self.titles)
            out.append(_P(1.0 if keep else 0.0, [0.0] * len(chunk_words)))
        return out


class _SilentFilter:
    def predict(self, word_lists, **kw):
        return [_P(0.0, [0.0] * len(words)) for words in word_lists]
