"""The LLM teacher against the fake OpenAI server (real HTTP on 127.0.0.1): per stage, a good reply
becomes the record the next stage needs, and a bad one a reject with a specific reason; prompts
carry the dataset's annotations and type; params, progress, config and secrets behave."""

import asyncio
import inspect
import json

import pytest

from efficientrag.config import load_config
from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.corpus import Corpus
from efficientrag.data.loader import load_data
from efficientrag.data.schema import Chunk, Example
from efficientrag.errors import ConfigError
from efficientrag.llm.async_client import AsyncLLMClient
from efficientrag.llm.config import LLMConfig, ModelPrice
from efficientrag.synth.config import SynthConfig
from efficientrag.synth.next_hop import R_FILTER_ALIGN
from efficientrag.synth.pipeline import run_synthesis
from efficientrag.synth.prompts import PROMPT_SETS, PROMPT_VERSION, prompt_digest
from efficientrag.synth.prompts import instructions as ins
from efficientrag.synth.prompts.render import STEPS_HEADER, TRIPLES_HEADER
from efficientrag.synth.records import R_COUNT, R_DEPENDENCY, R_EMPTY, DecomposedRecord, Reject, SubQuestion
from efficientrag.synth.replies import R_DOCUMENT, R_NO_JSON, R_SHAPE, R_TRUNCATED
from efficientrag.synth.stage import StageError
from efficientrag.synth.steps import (
    R_EMPTY_QUERY,
    R_NO_WORDS,
    R_NOT_ALIGNED,
    StepContext,
    align_step,
    decompose_step,
    label_step,
    next_hop_inputs,
    next_hop_step,
)
from efficientrag.synth.teacher import get_teacher
from efficientrag.synth.teacher.llm import LLMTeacher
from efficientrag.testing.fake_completions import request_text
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.fake_responders import queue_responder
from efficientrag.testing.synth_oracle import SynthOracle
from efficientrag.testing.word_overlap import WordOverlapRetriever

# A 2Wiki-style compositional question (our own invented entities).
FILM = Chunk("c0", "Ashen Shore", "Ashen Shore is a 1961 drama film directed by Rolf Amsel.")
DIRECTOR = Chunk(
    "c1", "Rolf Amsel", "Rolf Amsel (3 March 1921 - 5 May 1990) was a German film director born in Kessel."
)
OTHER = Chunk("c2", "Kessel", "Kessel is a town on the river Alm.")
CORPUS = Corpus([FILM, DIRECTOR, OTHER])
WIKI = Example(
    "w1",
    "Where was the director of film Ashen Shore born?",
    ["Kessel"],
    ["c0", "c1"],
    "compositional",
    "2wikimultihopqa",
    ["c0", "c1", "c2"],
    {"evidences": [["Ashen Shore", "director", "Rolf Amsel"], ["Rolf Amsel", "place of birth", "Kessel"]]},
)

HOTPOT_PROMPTS, WIKI_PROMPTS = PROMPT_SETS["hotpotqa"], PROMPT_SETS["2wikimultihopqa"]


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.reset_stats()
    server.faults = None
    server.require_api_key = None
    yield server


def client(srv, **kw):
    cfg = dict(
        base_url=srv.base_url,
        model="fake-model",
        api_key="test-key",
        max_retries=2,
        backoff_base=0.001,
        backoff_max=0.01,
        max_tokens=300,
    )
    cfg.update(kw)
    return AsyncLLMClient(LLMConfig(**cfg))


def run_with(srv, replies, body, *, corpus=CORPUS, examples=(WIKI,), teacher_kw=None, client_kw=None):
    """Serve ``replies`` in order and run ``body(ctx)`` with an LLM teacher; returns its result, or
    the Reject it raised."""
    srv.responder = queue_responder(replies)

    async def main():
        teacher = LLMTeacher(client(srv, **(client_kw or {})), corpus, **(teacher_kw or {}))
        ctx = StepContext(corpus=corpus, examples={e.id: e for e in examples}, teacher=teacher)
        try:
            return await body(ctx)
        except Reject as rej:
            return rej
        finally:
            await teacher.aclose()

    return asyncio.run(main())


async def settle(value):
    return await value if inspect.isawaitable(value) else value


def decompose_reply(*subs, wrap="{}"):
    body = {
        "decomposed_questions": {
            str(k): {"sub_question": q, "answer": a, "dependency": d, "document": doc}
            for k, (q, a, d, doc) in enumerate(subs, start=1)
        }
    }
    return wrap.format(json.dumps(body))


GOOD_SUBS = (
    ("Who directed Ashen Shore?", "Rolf Amsel", [], 1),
    ("Where was Rolf Amsel born?", "Kessel", [1], 2),
)


def decompose(srv, reply, example=WIKI, corpus=CORPUS, **kw):
    return run_with(
        srv,
        [reply],
        lambda ctx: settle(decompose_step(ctx)(example)),
        corpus=corpus,
        examples=(example,),
        **kw,
    )


# -- decompose ----------------------------------------------------------------------------------


def test_decompose_reply_with_chatter_becomes_a_validated_record(srv):
    reply = decompose_reply(*GOOD_SUBS, wrap="Sure! Here it is:\n```json\n{}\n```\nAnything else?")
    rec = decompose(srv, reply)
    assert rec["teacher"] == "llm" and rec["type"] == "compositional"
    assert [(s["sub_question"], s["chunk_id"], s["dependency"]) for s in rec["sub_questions"]] == [
        ("Who directed Ashen Shore?", "c0", []),
        ("Where was Rolf Amsel born?", "c1", [1]),
    ]
    (body,) = srv.request_bodies("chat")
    assert body["model"] == "fake-model" and body["temperature"] == 0.0 and body["max_tokens"] == 300
    assert "response_format" not in body
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": ins.DECOMPOSE}
    # 2Wiki compositional: the dataset's compositional and inference examples, then the record.
    shown = [m["content"] for m in messages[1:-1] if m["role"] == "user"]
    assert [s.split("\n")[0] for s in shown] == [
        f"Question: {WIKI_PROMPTS.shapes['compositional'][0].question}",
        f"Question: {WIKI_PROMPTS.shapes['inference'][0].question}",
    ]
    user = request_text(body)
    assert user.startswith(f"Question: {WIKI.question}\nFinal answer: Kessel\nQuestion type: compositional (")
    assert "[1] Ashen Shore: Ashen Shore is a 1961" in user and "[2] Rolf Amsel: Rolf Amsel (3 March" in user
    assert "Kessel: Kessel is a town" not in user  # only the gold paragraphs
    assert (
        f"{TRIPLES_HEADER}\n- Ashen Shore | director | Rolf Amsel\n- Rolf Amsel | place of birth | Kessel"
        in user
    )


def sq(q, a, d, doc):
    return (q, a, d, doc)


@pytest.mark.parametrize(
    ("reply", "reason", "detail"),
    [
        (decompose_reply(sq("A?", "x", [2], 1), sq("B?", "y", [1], 2)), R_DEPENDENCY, "cycle"),
        (decompose_reply(sq("A?", "x", [], 1), sq("B?", "y", [3], 2)), R_DEPENDENCY, "depends on 3"),
        (decompose_reply(sq("A?", "x", [1], 1), sq("B?", "y", [], 2)), R_DEPENDENCY, "depends on 1"),
        (decompose_reply(sq("A?", "x", [], 1)), R_COUNT, "1 sub-questions for 2 gold chunks"),
        (
            decompose_reply(sq("A?", "x", [], 1), sq("B?", "y", [1], 2), sq("C?", "z", [2], 2)),
            R_COUNT,
            "chunk(s) ['c1'] answer more than one sub-question",
        ),
        (decompose_reply(sq("A?", "x", [], 1), sq("B?", "y", [1], 1)), R_COUNT, "more than one"),
        (decompose_reply(sq("A?", " ", [], 1), sq("B?", "y", [1], 2)), R_EMPTY, "sub-question 1"),
        (decompose_reply(sq("A?", "x", [], 1), sq("B?", "y", [1], 3)), R_DOCUMENT, "paragraph 3 of 2"),
        ("The director was Rolf Amsel, born in Kessel.", R_NO_JSON, "no JSON object found"),
        ('{"sub_questions": []}', R_SHAPE, "missing key 'decomposed_questions'"),
        (
            '{"decomposed_questions": {"1": {"sub_question": 5, "answer": "x", "document": 1}}}',
            R_SHAPE,
            "is int",
        ),
        (
            decompose_reply(sq("A?", "x", "one", 1), sq("B?", "y", [1], 2)),
            R_SHAPE,
            "'dependency' holds 'one'",
        ),
    ],
    ids=[
        "cycle",
        "out-of-range",
        "self",
        "too-few",
        "too-many",
        "chunk-twice",
        "empty-answer",
        "unknown-paragraph",
        "prose",
        "missing-key",
        "wrong-type",
        "bad-dependency",
    ],
)
def test_bad_decomposition_replies_are_rejects_with_reasons(srv, reply, reason, detail):
    rej = decompose(srv, reply)
    assert isinstance(rej, Reject), rej
    assert rej.reason == reason
    assert detail in rej.detail


def test_a_reply_cut_at_max_tokens_is_a_reject_not_a_crash(srv):
    srv.faults = ["truncated"]
    rej = decompose(srv, decompose_reply(*GOOD_SUBS))
    assert isinstance(rej, Reject) and rej.reason == R_TRUNCATED
    assert "partial reply" in rej.detail


def test_hotpotqa_bridge_gets_the_bridge_examples(srv):
    a = Chunk("h0", "Marsh Lane", "Marsh Lane is a 1950 film starring Ada Pell.")
    b = Chunk("h1", "Ada Pell", "Ada Pell was an actress who later served as mayor of Corby.")
    corpus = Corpus([a, b])
    raw = {"type": "bridge", "context": [], "supporting_facts": []}
    ex = Example(
        "h",
        "Which office was held by the star of Marsh Lane?",
        ["mayor of Corby"],
        ["h0", "h1"],
        "bridge",
        "hotpotqa",
        [],
        raw,
    )
    rec = decompose(
        srv,
        decompose_reply(
            ("Who starred in Marsh Lane?", "Ada Pell", [], 1),
            ("Which office did Ada Pell hold?", "mayor of Corby", [1], 2),
        ),
        example=ex,
        corpus=corpus,
    )
    assert rec["type"] == "bridge" and rec["sub_questions"][1]["dependency"] == [1]
    text = json.dumps(srv.request_bodies("chat")[0]["messages"])
    assert (
        HOTPOT_PROMPTS.shapes["bridge"][0].question in text
        and HOTPOT_PROMPTS.shapes["comparison"][0].question not in text
    )
    user = request_text(srv.request_bodies("chat")[0])
    assert TRIPLES_HEADER not in user and STEPS_HEADER not in user


def test_hotpotqa_ircot_record_without_type_gets_one_inferred(srv):
    a = Chunk("h0", "Corvin Dahl", "Corvin Dahl is a painter.")
    b = Chunk("h1", "Mira Lessing", "Mira Lessing is a composer.")
    raw = {
        "question_id": "h",
        "contexts": [
            {"id": "0", "title": a.title, "paragraph_text": a.text, "is_supporting": True},
            {"id": "1", "title": b.title, "paragraph_text": b.text, "is_supporting": True},
        ],
    }
    ex = Example(
        "h", "Are Corvin Dahl and Mira Lessing both painters?", ["no"], ["h0", "h1"], "", "hotpotqa", [], raw
    )
    rec = decompose(
        srv,
        decompose_reply(
            ("What is Corvin Dahl?", "painter", [], "Corvin Dahl"),
            ("What is Mira Lessing?", "composer", [], 2),
        ),
        example=ex,
        corpus=Corpus([a, b]),
    )
    assert rec["type"] == "comparison"
    assert [s["chunk_id"] for s in rec["sub_questions"]] == ["h0", "h1"]  # a title names its paragraph
    text = json.dumps(srv.request_bodies("chat")[0]["messages"])
    assert (
        HOTPOT_PROMPTS.shapes["comparison"][1].question in text
        and HOTPOT_PROMPTS.shapes["bridge"][0].question not in text
    )


def musique_case():
    paragraphs = [
        {
            "idx": 0,
            "title": "Kestrel Gazette",
            "paragraph_text": "The Kestrel Gazette is published by Aldmoor University.",
        },
        {
            "idx": 1,
            "title": "Aldmoor University",
            "paragraph_text": "Aldmoor University was founded in 1887.",
        },
    ]
    chunks = [Chunk(f"m{p['idx']}", p["title"], p["paragraph_text"]) for p in paragraphs]
    raw = {
        "paragraphs": paragraphs,
        "question_decomposition": [
            {
                "question": "Kestrel Gazette >> publisher",
                "answer": "Aldmoor University",
                "paragraph_support_idx": 0,
            },
            {"question": "When was #1 founded?", "answer": "1887", "paragraph_support_idx": 1},
        ],
    }
    # Gold chunks in another order than the raw paragraphs: the prompt numbers follow the gold order.
    ex = Example(
        "2hop__1",
        "When was the publisher of the Kestrel Gazette founded?",
        ["1887"],
        ["m1", "m0"],
        "2hop",
        "musique",
        [],
        raw,
    )
    return Corpus(chunks), ex


@pytest.mark.parametrize("hints", [True, False])
def test_musique_annotated_steps_point_at_the_prompt_paragraphs(srv, hints):
    corpus, ex = musique_case()
    reply = decompose_reply(
        ("Who publishes the Kestrel Gazette?", "Aldmoor University", [], 2),
        ("When was Aldmoor University founded?", "1887", [1], 1),
    )
    rec = decompose(srv, reply, example=ex, corpus=corpus, teacher_kw={"hints": hints})
    assert [s["chunk_id"] for s in rec["sub_questions"]] == ["m0", "m1"]
    user = request_text(srv.request_bodies("chat")[0])
    steps = f"{STEPS_HEADER}\n1. Kestrel Gazette >> publisher -> Aldmoor University (paragraph 2)\n2. When was #1 founded? -> 1887 (paragraph 1)"
    assert (steps in user) is hints
    assert "[1] Aldmoor University: Aldmoor University was founded in 1887." in user


# -- label (and its alignment) ------------------------------------------------------------------

SUB2 = SubQuestion(2, "Where was Rolf Amsel born?", "Kessel", [1], "c1")


def label_then_align(srv, reply):
    item = {"id": "w1#2", "question_id": "w1", "sub": SUB2.to_dict()}

    async def body(ctx):
        labeled = await settle(label_step(ctx)(item))
        return labeled, align_step(ctx)(labeled)

    return run_with(srv, [reply], body)


def test_label_reply_is_aligned_onto_the_chunk(srv):
    labeled, aligned = label_then_align(srv, '{"extracted_words": "Rolf Amsel film director born in Kessel"}')
    assert labeled["extracted_words"] == ["Rolf", "Amsel", "film", "director", "born", "in", "Kessel"]
    assert labeled["extract_method"] == "llm" and "chunk_word_indices" not in labeled
    assert aligned["align_rate"] == 1.0 and aligned["align_method"] == "search"
    marked = [w for w, lab in zip(aligned["chunk_words"], aligned["labels"], strict=True) if lab]
    assert marked == labeled["extracted_words"]
    assert aligned["labels"][:3] == [0, 0, 0]  # the body's "Rolf Amsel", next to the rest, not the title's
    body = srv.request_bodies("chat")[0]
    assert body["messages"][0]["content"] == ins.LABEL
    assert request_text(body) == (
        "Sub-question: Where was Rolf Amsel born?\nAnswer: Kessel\nParagraph: " + DIRECTOR.contents
    )
    assert WIKI_PROMPTS.label[0].extracted_words in json.dumps(body["messages"])


def test_invented_label_words_fail_alignment_with_the_words_named(srv):
    rej = run_with(
        srv,
        ['{"extracted_words": "Rolf Amsel was born in the lovely town of Kessel"}'],
        lambda ctx: _label_and_align(ctx),
    )
    assert isinstance(rej, Reject) and rej.reason == R_NOT_ALIGNED
    assert "lovely town" in rej.detail and "< 0.8" in rej.detail


async def _label_and_align(ctx):
    labeled = await settle(label_step(ctx)({"id": "w1#2", "question_id": "w1", "sub": SUB2.to_dict()}))
    return align_step(ctx)(labeled)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ('{"extracted_words": ""}', R_NO_WORDS),
        ('{"extracted_words": {"w": 1}}', R_SHAPE),
        ("Kessel", R_NO_JSON),
    ],
)
def test_unusable_label_replies(srv, reply, reason):
    rej = run_with(srv, [reply], lambda ctx: _label_and_align(ctx))
    assert isinstance(rej, Reject) and rej.reason == reason


# -- next-hop query -----------------------------------------------------------------------------


def next_hop(srv, reply):
    subs = [SubQuestion(1, "Who directed Ashen Shore?", "Rolf Amsel", [], "c0"), SUB2]
    decomposed = DecomposedRecord(
        "w1", WIKI.question, ["Kessel"], "2wikimultihopqa", "compositional", "llm", subs
    )
    info = {"w1#1": ["Ashen", "Shore", "directed", "by", "Rolf", "Amsel"], "w1#2": ["born", "in", "Kessel"]}
    aligned = {sid: {"chunk_words": words, "labels": [1] * len(words)} for sid, words in info.items()}
    first, second = next_hop_inputs([decomposed.to_dict()], aligned)

    async def body(ctx):
        step = next_hop_step(ctx)
        hop1 = await settle(step(first, []))
        return hop1, await settle(step(second, [hop1]))

    return run_with(srv, [reply], body)


def test_next_hop_query_is_aligned_onto_the_filter_input(srv):
    hop1, rec = next_hop(srv, '{"filtered_query": "Where was born? Rolf Amsel"}')
    assert hop1["query"] == WIKI.question and srv.total_requests == 1  # hop 1 needs no LLM call
    assert rec["query_words"] == ["Where", "was", "born", "?", "Rolf", "Amsel"]
    assert rec["filtered_query"] == "Where was born? Rolf Amsel" and rec["filter_align_rate"] == 1.0
    assert rec["hop"] == 2 and rec["prev_query_id"] == "w1#1"
    assert rec["filter_words"][:2] == ["Query", ":"] and sum(rec["filter_labels"]) == 6
    body = srv.request_bodies("chat")[0]
    assert body["messages"][0]["content"] == ins.NEXT_HOP
    assert request_text(body) == (
        f"Question: {WIKI.question}\nAnswered: Who directed Ashen Shore? -> Rolf Amsel\n"
        "Known information: Ashen Shore directed by Rolf Amsel"
    )


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ('{"filtered_query": "In which German town was Rolf Amsel born"}', R_FILTER_ALIGN),
        ('{"filtered_query": ""}', R_EMPTY_QUERY),
        ('{"next_query": "Where was born? Rolf Amsel"}', R_SHAPE),
    ],
    ids=["invented-words", "empty", "missing-key"],
)
def test_unusable_next_hop_replies(srv, reply, reason):
    rej = next_hop(srv, reply)
    assert isinstance(rej, Reject) and rej.reason == reason


# -- request options, bookkeeping, config -------------------------------------------------------


def test_json_mode_params_and_progress(srv, tmp_path):
    srv.responder = queue_responder(['{"extracted_words": "born in Kessel"}'])
    prices = {"fake-model": ModelPrice(prompt=1000.0, completion=2000.0)}

    async def main():
        llm = client(srv, prices=prices, cache_dir=str(tmp_path), seed=7)
        teacher = LLMTeacher(llm, CORPUS, json_mode=True)
        try:
            before = dict(teacher.progress())
            for _ in range(2):  # the second identical request is answered by the cache
                await teacher.extract_words(WIKI, SUB2, DIRECTOR)
            return before, dict(teacher.progress()), dict(teacher.params())
        finally:
            await teacher.aclose()

    before, after, params = asyncio.run(main())
    assert before == {"calls": 0, "cached": 0, "retries": 0, "failed": 0, "usd": 0.0}
    assert after["calls"] == 2 and after["cached"] == 1 and after["usd"] > 0
    assert srv.total_requests == 1
    assert srv.request_bodies("chat")[0]["response_format"] == {"type": "json_object"}
    assert params == {
        "teacher": "llm",
        "model": "fake-model",
        "prompt_version": PROMPT_VERSION,
        "prompt_digest": prompt_digest(),
        "temperature": 0.0,
        "max_tokens": 300,
        "seed": 7,
        "extra_body": {},
        "json_mode": True,
        "hints": True,
    }


def test_build_teacher_from_config(srv, tmp_path):
    cfg = SynthConfig(
        teacher="llm", out_dir=str(tmp_path), concurrency=5, llm=LLMConfig(base_url=srv.base_url)
    )
    with pytest.raises(ConfigError, match="llm.model"):
        get_teacher(cfg, CORPUS)
    cfg.llm.model = "fake-model"
    teacher = get_teacher(cfg, CORPUS)
    try:
        assert isinstance(teacher, LLMTeacher)
        assert teacher.client.cfg.concurrency == 5  # the stage's concurrency drives the client
    finally:
        asyncio.run(teacher.aclose())
    assert json.loads((tmp_path / "llm_usage.json").read_text())["total"]["calls"] == 0
    openai_cfg = SynthConfig(
        teacher="llm",
        llm=LLMConfig(
            base_url="https://api.openai.com/v1", model="gpt-x", api_key_env="EFFICIENTRAG_TEST_NO_KEY"
        ),
    )
    with pytest.raises(ConfigError, match="EFFICIENTRAG_TEST_NO_KEY"):
        get_teacher(openai_cfg, CORPUS)


def test_presets_load(repo_root):
    for name in ("hotpotqa", "2wikimultihopqa", "musique"):
        cfg = load_config(SynthConfig, repo_root / f"configs/synth/{name}-llm.yaml")
        base = load_config(SynthConfig, repo_root / f"configs/synth/{name}.yaml")
        assert cfg.teacher == "llm" and cfg.llm.model and cfg.llm.base_url and cfg.llm.cache_dir
        assert cfg.llm.temperature == 0.0 and cfg.llm.max_tokens
        assert cfg.data == base.data and cfg.out_dir != base.out_dir


@pytest.fixture(scope="module")
def toy():
    pooled = load_data(DataConfig(dataset="toy", toy=ToyWorldConfig(seed=5, num_questions=6)))
    return pooled.corpus, pooled.examples


def toy_run(srv, toy, out, **llm):
    corpus, examples = toy
    cfg = SynthConfig(
        teacher="llm",
        out_dir=str(out),
        progress=False,
        stages=["decompose", "label"],
        concurrency=3,
        llm=LLMConfig(base_url=srv.base_url, **{"model": "fake-model", **llm}),
    )
    return run_synthesis(cfg, corpus=corpus, examples=examples, retriever=WordOverlapRetriever(corpus))


def test_resuming_with_another_model_is_refused(srv, toy, tmp_path):
    srv.responder = SynthOracle(wrap_every=0)
    first = toy_run(srv, toy, tmp_path)
    assert first["stages"]["decompose"]["new_written"] == 6
    with pytest.raises(StageError, match="model: 'fake-model' -> 'other-model'"):
        toy_run(srv, toy, tmp_path, model="other-model")


def test_the_api_key_is_sent_but_never_written(srv, toy, tmp_path, caplog):
    secret = "sk-test-DO-NOT-WRITE-0123456789"
    srv.responder = SynthOracle(wrap_every=0)
    srv.require_api_key = secret
    caplog.set_level("DEBUG")
    out, cache = tmp_path / "out", tmp_path / "cache"
    stats = toy_run(srv, toy, out, api_key=secret, cache_dir=str(cache))
    assert stats["stages"]["label"]["new_written"] > 0 and srv.total_requests > 0  # the server accepted it
    files = [p for d in (out, cache) for p in d.rglob("*") if p.is_file()]
    assert (out / "config.yaml").is_file() and (cache / "llm_cache.sqlite").is_file()
    for path in files:
        assert secret.encode() not in path.read_bytes(), path
    assert secret not in caplog.text
