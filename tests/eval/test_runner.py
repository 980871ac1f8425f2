import json
import os
import signal

import pytest

from efficientrag.baselines.base import Prediction, SharedSettings
from efficientrag.baselines.direct_r import DirectRetrieval
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk, Example
from efficientrag.eval.interrupts import RunInterrupted
from efficientrag.eval.runner import run_method
from efficientrag.jsonl import read_jsonl
from efficientrag.retrieval.base import Hit


class WordOverlapRetriever:
    """A deterministic retriever for runner tests: score = shared lower-cased words."""

    def __init__(self, corpus):
        self.corpus = corpus
        self.calls = 0

    def search(self, queries, k):
        self.calls += 1
        out = []
        for q in queries:
            qw = set(q.lower().split())
            scored = [(len(qw & set(c.contents.lower().split())), -i, c) for i, c in enumerate(self.corpus)]
            scored.sort(reverse=True)
            out.append([Hit(c, float(s)) for s, _, c in scored[:k]])
        return out


@pytest.fixture()
def world():
    corpus = Corpus(
        [
            Chunk("a", "Alpha", "alpha film directed by bob"),
            Chunk("b", "Bob", "bob was born in paris"),
            Chunk("c", "Gamma", "gamma unrelated text"),
            Chunk("d", "Delta", "delta more unrelated"),
        ]
    )
    examples = [
        Example("q1", "where was the director of alpha film born", ["paris"], ["a", "b"]),
        Example("q2", "gamma text", ["unrelated"], ["c"]),
        Example("q3", "delta", ["nothing"], ["d", "b"]),
    ]
    return corpus, examples


def test_direct_r_records_and_summary(tmp_path, world):
    corpus, examples = world
    method = DirectRetrieval(WordOverlapRetriever(corpus), None, shared=SharedSettings(ks=(1, 3)))
    summary = run_method(method, examples, tmp_path, ks=[1, 3], batch_size=2, progress=False)
    recs = {r["id"]: r for r in read_jsonl(tmp_path / "predictions.jsonl")}
    assert recs["q1"]["retrieved_ids"][0] == "a"
    assert recs["q1"]["retrieval"]["1"]["recall"] == 0.5
    # q1: a(3 words) then b ("born") -> both gold at k=3
    assert recs["q1"]["retrieval"]["3"]["all_gold"] is True
    assert recs["q2"]["hits"][0] is True
    r1 = summary["retrieval"]["1"]
    # recall@1: q1 .5, q2 1, q3 .5 -> 66.67
    assert r1["recall"] == pytest.approx(200 / 3)
    assert r1["num_chunks"] == 1.0
    assert summary["counters_mean"]["retrieval_calls"] == 1.0
    assert "direct_r@3" in (tmp_path / "table.md").read_text()
    assert json.loads((tmp_path / "summary.json").read_text())["n"] == 3


class FlakyMethod:
    name = "flaky"

    def __init__(self, bad_ids):
        self.bad = set(bad_ids)
        self.seen = []

    def run_batch(self, examples):
        self.seen.extend(ex.id for ex in examples)
        if any(ex.id in self.bad for ex in examples):
            raise RuntimeError("boom")
        return [Prediction(ex.id, chunks=[]) for ex in examples]


def test_failing_example_is_recorded_not_fatal_and_resume_skips_done(tmp_path, world):
    _, examples = world
    m = FlakyMethod({"q2"})
    summary = run_method(m, examples, tmp_path, ks=[1], batch_size=3, progress=False)
    assert summary["num_failed"] == 1 and summary["n"] == 2
    errors = list(read_jsonl(tmp_path / "errors.jsonl"))
    assert errors[0]["id"] == "q2" and "boom" in errors[0]["error"]
    # The table says that its averages cover 2 of 3 questions, in the rows and below them.
    table = (tmp_path / "table.md").read_text()
    assert "| 2 (1 failed) |" in table
    assert "1 of 3 questions failed" in table
    # Rerun once q2 is fixed: only q2 runs, nothing is duplicated.
    m2 = FlakyMethod(set())
    summary2 = run_method(m2, examples, tmp_path, ks=[1], batch_size=3, progress=False)
    assert m2.seen == ["q2"]
    assert summary2["n"] == 3 and summary2["num_failed"] == 0
    ids = [r["id"] for r in read_jsonl(tmp_path / "predictions.jsonl")]
    assert sorted(ids) == ["q1", "q2", "q3"]
    assert not (tmp_path / "errors.jsonl").exists()
    assert "failed" not in (tmp_path / "table.md").read_text()


class SignalledTwice:
    """A method that receives a run's two stop signals while its first batch is in flight."""

    name = "signalled"

    def __init__(self):
        self.batches: list[list[str]] = []

    def run_batch(self, examples):
        self.batches.append([ex.id for ex in examples])
        if len(self.batches) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # asks the run to stop after this batch
            os.kill(os.getpid(), signal.SIGINT)  # stops it at once, here
        return [Prediction(ex.id, []) for ex in examples]


def test_a_second_signal_stops_inside_the_batch_without_retrying_or_recording_it(tmp_path, world):
    _, examples = world
    method = SignalledTwice()
    with pytest.raises(RunInterrupted) as caught:
        run_method(method, examples, tmp_path, ks=[1], batch_size=2, progress=False)
    assert (caught.value.done, caught.value.to_go) == (0, 3)
    # Neither retried one question at a time nor written as failures: the batch is simply not done.
    assert method.batches == [["q1", "q2"]]
    assert not (tmp_path / "errors.jsonl").exists() or not (tmp_path / "errors.jsonl").read_text()
    assert list(read_jsonl(tmp_path / "predictions.jsonl")) == []
