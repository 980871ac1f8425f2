import asyncio
import json

import pytest
from datasets import load_dataset

from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.data.loader import load_data
from efficientrag.jsonl import read_jsonl
from efficientrag.synth.config import SynthConfig
from efficientrag.synth.pipeline import run_synthesis
from efficientrag.synth.records import OUTPUT_FILES, STAGES
from efficientrag.synth.stage import StageError
from efficientrag.synth.teacher.annotations import AnnotationTeacher
from efficientrag.testing.word_overlap import WordOverlapRetriever

STOP = ["the", "of", "a", "in", "is", "was", "who", "what", "which", "by", "and"]


@pytest.fixture(scope="module")
def toy():
    cfg = DataConfig(dataset="toy", toy=ToyWorldConfig(seed=3, num_questions=60))
    pooled = load_data(cfg)
    return pooled.corpus, pooled.examples


def config(tmp_path, **kw):
    return SynthConfig(data=DataConfig(dataset="toy"), out_dir=str(tmp_path), progress=False, **kw)


def run(cfg, toy, **kw):
    corpus, examples = toy
    kw.setdefault("retriever", WordOverlapRetriever(corpus, stopwords=STOP))
    return run_synthesis(cfg, corpus=corpus, examples=examples, **kw)


def loaded_question_ids(data_files):
    ds = load_dataset("json", data_files=data_files)
    return {split: list(ds[split]["question_id"]) for split in data_files}


def read(path):
    return list(read_jsonl(path)) if path.is_file() else []


def file_ids(tmp_path, stage):
    out = [r["id"] for r in read(tmp_path / OUTPUT_FILES[stage])]
    rej = [r["id"] for r in read(tmp_path / f"{stage}.rejects.jsonl")]
    return out, rej


def rows(tmp_path):
    return {
        name: sorted(json.dumps(r, sort_keys=True) for r in read(tmp_path / name / f"{split}.jsonl"))
        for name in ("labeler", "filter")
        for split in ("train", "validation")
    }


def test_toy_world_end_to_end(tmp_path, toy):
    stats = run(config(tmp_path), toy)
    corpus, examples = toy
    s = stats["datasets"]["toy"]
    assert s["questions"]["selected"] == 60 and s["questions"]["complete"] == s["questions"]["decomposed"]
    n_subs = s["sub_questions"]["decomposed"]
    assert n_subs > 120
    # Every input of every stage is an output or a reject, never both, never twice.
    accounted = {}
    for stage in STAGES[:-1]:
        out, rej = file_ids(tmp_path, stage)
        assert len(out) + len(rej) == len(set(out) | set(rej))
        accounted[stage] = (set(out), set(out) | set(rej))
    subs = {f"{r['id']}#{q['idx']}" for r in read(tmp_path / "decomposed.jsonl") for q in r["sub_questions"]}
    assert accounted["decompose"][1] == {e.id for e in examples}
    assert accounted["label"][1] == subs
    assert accounted["align"][1] == accounted["label"][0]
    assert accounted["next_hop"][1] == accounted["align"][0]
    assert accounted["negatives"][1] == accounted["next_hop"][0]
    # Default recipe: one positive per sub-question, plus the question itself as a second
    # positive when it differs from the next-hop query, and four negatives each.
    labeler_rows = [r for k in ("train", "validation") for r in read(tmp_path / "labeler" / f"{k}.jsonl")]
    n_qpos = sum(r["id"].endswith("/qpos") for r in labeler_rows)
    assert 0 < n_qpos <= n_subs
    assert s["labeler"]["tags"] == {"continue": n_subs + n_qpos, "terminate": 4 * n_subs}
    assert s["filter"]["rows"] == s["sub_questions"]["dependent"]
    assert s["align_rate"]["min"] == 1.0 and s["filter_align_rate"]["min"] == 1.0
    assert 0.05 < s["labeler"]["positive_label_share"] < 0.5
    # Negatives are never gold chunks of their question.
    gold = {e.id: set(e.gold_chunk_ids) for e in examples}
    for rec in read(tmp_path / "negatives.jsonl"):
        assert rec["negative_chunk_id"] not in gold[rec["question_id"]]
    files = stats["files"]
    question_ids = loaded_question_ids(
        {k: str(tmp_path / files[f"labeler/{k}"]) for k in ("train", "validation")}
    )
    assert len(question_ids["train"]) + len(question_ids["validation"]) == 5 * n_subs + n_qpos
    assert not set(question_ids["train"]) & set(question_ids["validation"])
    saved = json.loads((tmp_path / "stats.json").read_text())
    assert saved["datasets"]["toy"]["labeler"]["rows"] == 5 * n_subs + n_qpos
    assert (tmp_path / "build.done.json").is_file()


def test_stage_by_stage_equals_one_shot_and_rerun_is_idempotent(tmp_path, toy):
    one = tmp_path / "one"
    run(config(one), toy)
    staged = tmp_path / "staged"
    run(config(staged, stages=["decompose", "label"]), toy)
    run(config(staged, stages=["align", "next_hop"]), toy)
    run(config(staged, stages=["negatives", "build"]), toy)
    assert rows(one) == rows(staged)
    before = {stage: file_ids(staged, stage) for stage in STAGES[:-1]}
    stats = run(config(staged), toy)
    assert {stage: file_ids(staged, stage) for stage in STAGES[:-1]} == before
    assert all(
        v["new_written"] == 0 and v["new_rejected"] == 0
        for k, v in stats["stages"].items()
        if k in STAGES[:-1]
    )


class FlakyTeacher(AnnotationTeacher):
    """Dies (like a killed process) at the n-th label call of its first life."""

    def __init__(self, corpus, die_at):
        super().__init__(corpus)
        self.calls = 0
        self.die_at = die_at

    def extract_words(self, example, sub_question, chunk):
        self.calls += 1
        if self.calls == self.die_at:
            raise KeyboardInterrupt
        return super().extract_words(example, sub_question, chunk)


def test_interrupted_run_resumes_to_the_same_result(tmp_path, toy):
    corpus, _ = toy
    clean = tmp_path / "clean"
    run(config(clean), toy)
    crashed = tmp_path / "crashed"
    with pytest.raises(KeyboardInterrupt):
        run(config(crashed), toy, teacher=FlakyTeacher(corpus, die_at=50))
    assert not (crashed / "label.done.json").exists()
    assert len(read(crashed / "labeled.jsonl")) == 49
    run(config(crashed), toy)
    assert rows(clean) == rows(crashed)


class AsyncTeacher(AnnotationTeacher):
    """The shape of an LLM teacher: every judgement is a coroutine."""

    def __init__(self, corpus):
        super().__init__(corpus)
        self.in_flight = 0
        self.peak = 0

    async def _slow(self, value):
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.001)
        self.in_flight -= 1
        return value

    async def decompose(self, example):
        return await self._slow(super().decompose(example))

    async def extract_words(self, example, sub_question, chunk):
        return await self._slow(super().extract_words(example, sub_question, chunk))

    async def next_hop_query(self, example, sub_question, prev_query_words, dependencies):
        return await self._slow(super().next_hop_query(example, sub_question, prev_query_words, dependencies))

    def progress(self):
        return {"calls": "n/a"}


def test_async_teacher_gives_the_same_data_with_concurrency(tmp_path, toy):
    corpus, _ = toy
    run(config(tmp_path / "sync"), toy)
    teacher = AsyncTeacher(corpus)
    run(config(tmp_path / "async", concurrency=6), toy, teacher=teacher)
    assert rows(tmp_path / "sync") == rows(tmp_path / "async")
    assert teacher.peak == 6


def test_changed_settings_are_refused_until_forced(tmp_path, toy):
    run(config(tmp_path), toy)
    with pytest.raises(StageError, match="min_align_rate"):
        run(config(tmp_path, min_align_rate=0.9), toy)
    stats = run(
        config(tmp_path, min_align_rate=0.9, stages=["align", "next_hop", "negatives", "build"], force=True),
        toy,
    )
    assert stats["stages"]["align"]["new_written"] > 0
    assert stats["stages"]["next_hop"]["new_written"] > 0  # cleared with align, so redone


def test_a_stage_needs_its_upstream_output(tmp_path, toy):
    with pytest.raises(StageError, match="run it first"):
        run(config(tmp_path, stages=["align"]), toy)


def test_limit_selects_the_first_questions_and_can_grow(tmp_path, toy):
    small = run(config(tmp_path, limit=10), toy)
    assert small["datasets"]["toy"]["questions"]["selected"] == 10
    grown = run(config(tmp_path, limit=20), toy)
    assert grown["datasets"]["toy"]["questions"]["selected"] == 20
    assert grown["stages"]["decompose"]["new_written"] == 10


def test_rejects_are_counted_by_stage_and_reason(tmp_path, toy):
    corpus, examples = toy
    broken = list(examples)
    broken[0] = type(broken[0])(**{**broken[0].__dict__, "raw": {"unknown": True}})
    stats = run_synthesis(
        config(tmp_path),
        corpus=corpus,
        examples=broken,
        retriever=WordOverlapRetriever(corpus, stopwords=STOP),
    )
    assert stats["datasets"]["toy"]["rejects"]["decompose"] == {"unsupported record format": 1}
    rej = read(tmp_path / "decompose.rejects.jsonl")
    assert rej[0]["id"] == broken[0].id and rej[0]["stage"] == "decompose"
