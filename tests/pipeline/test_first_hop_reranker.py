"""The loop's first-hop reranker (``first_hop_reranker``, issue 49): the question's ``first_top_k``
hits are reordered by a cross-encoder and the Labeler judges the best ``top_k`` of them; the floor
keeps the reranker's top ``floor_k``; later hops are not reranked. A scripted reranker checks the
order; a tiny saved cross-encoder checks that a real folder loads, runs and is hashed."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from efficientrag.config import load_config
from efficientrag.experiment.assembly import check_model_folders
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.run_binding import loop_fingerprint
from efficientrag.fingerprint import folder_digest
from efficientrag.models.cross_encoder import load_cross_encoder, score_pairs
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG
from efficientrag.testing.scripted_models import ALPHA_QUESTION as Q1
from efficientrag.testing.scripted_models import OMEGA_QUESTION as Q2
from efficientrag.testing.scripted_models import STOPWORDS as STOP
from efficientrag.testing.scripted_models import USEFUL_WORDS as USEFUL
from efficientrag.testing.scripted_models import InfoOnlyFilter, ScriptedLabeler, bridge_corpus
from efficientrag.testing.tiny_backbones import tiny_cross_encoder
from efficientrag.testing.token_tasks import sentences
from efficientrag.testing.word_overlap import WordOverlapRetriever

WIDE, KEEP = 6, 2
# The scripted reranker's scores by chunk id: it prefers paris, then alpha (the search's own order
# for Q1 is alpha, bob, omega, carla, noise, paris).
PREFERS = {"paris": 3.0, "alpha": 2.0, "noise": 1.0}


class ScriptedReranker:
    """A cross-encoder whose score of a pair is ``PREFERS`` of the chunk (0 for the rest); records
    the pairs it was asked."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def predict(self, pairs, batch_size=32, show_progress_bar=False):
        self.calls.append(list(pairs))
        ids = {c.contents: c.id for c in bridge_corpus()}
        return [PREFERS.get(ids[text], 0.0) for _, text in pairs]


@pytest.fixture()
def scripted(monkeypatch) -> dict[str, ScriptedReranker]:
    """``load_cross_encoder`` gives a ScriptedReranker (the folder named is recorded)."""
    made: dict[str, ScriptedReranker] = {}

    def load(path, **_):
        made[str(path)] = ScriptedReranker()
        return made[str(path)]

    monkeypatch.setattr("efficientrag.models.cross_encoder.load_cross_encoder", load)
    return made


def loop(reranker: str | None, searched: list[int], **cfg) -> EfficientRAG:
    retriever = WordOverlapRetriever(bridge_corpus(), STOP)
    search = retriever.search
    retriever.search = lambda queries, k: searched.append(k) or search(queries, k)
    config = EfficientRAGConfig(
        top_k=KEEP, first_top_k=WIDE, first_hop_reranker=reranker, device="cpu", **cfg
    )
    return EfficientRAG(retriever, ScriptedLabeler(USEFUL), InfoOnlyFilter(), config)


def test_the_labeler_judges_the_rerankers_best_of_the_wide_first_hop_and_hops_on(scripted):
    searched: list[int] = []
    rag = loop("ce-folder", searched, max_hops=3, floor_k=1)
    res = rag.retrieve(Q1)
    first = res.trace[0].hits[0]
    assert [(r.id, r.score) for r in first] == [("paris", 3.0), ("alpha", 2.0)]  # the reranker's order
    assert [r.floor for r in first] == [True, False]  # the floor is the reranker's top 1, not alpha
    assert [c[0] for _, c in rag.labeler.calls[0]] == ["Paris", "Alpha"]  # only its best KEEP judged
    (asked,) = scripted["ce-folder"].calls
    assert len(asked) == WIDE and {q for q, _ in asked} == {Q1}  # the question's WIDE hits, scored once
    assert res.trace[1].queries == ["Bob Stone"]  # it hops on from alpha, as without a reranker
    assert res.chunk_ids[:3] == ["paris", "alpha", "bob"]
    assert searched[0] == WIDE and set(searched[1:]) == {KEEP}  # later hops: top_k, not reranked
    assert len(scripted["ce-folder"].calls) == 1
    assert res.counters["reranked_pairs"] == WIDE
    assert "rerank" in res.trace[0].timings_s and all("rerank" not in h.timings_s for h in res.trace[1:])


def test_without_a_reranker_the_wide_first_hop_is_judged_whole(scripted):
    searched: list[int] = []
    res = loop(None, searched, max_hops=1).retrieve(Q1)
    assert len(res.trace[0].hits[0]) == WIDE and "reranked_pairs" not in res.counters and not scripted


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    texts = sentences(100) + [c.contents for c in bridge_corpus()] + [Q1, Q2]
    return tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "reranker", texts)


def test_a_saved_cross_encoder_folder_runs_in_the_loop(folder):
    """A real folder in the CrossEncoder layout: loaded, its scores are the trace's. (A random tiny
    model scores every pair within ~1e-5 of the others, so the order itself is float noise here:
    the scripted reranker above checks the order.)"""
    searched: list[int] = []
    res = loop(str(folder), searched, max_hops=2).retrieve(Q1)
    first = res.trace[0].hits[0]
    hits = WordOverlapRetriever(bridge_corpus(), STOP).search([Q1], WIDE)[0]
    scores = score_pairs(load_cross_encoder(folder, device="cpu"), [(Q1, h.chunk.contents) for h in hits])
    own = dict(zip([h.id for h in hits], scores, strict=True))
    assert len(first) == KEEP and all(r.score == pytest.approx(own[r.id], abs=1e-5) for r in first)
    assert res.counters["reranked_pairs"] == WIDE


def test_settings_that_cannot_work_are_refused():
    with pytest.raises(ValueError, match="set first_top_k above top_k"):
        EfficientRAGConfig(top_k=6, first_hop_reranker="ce")
    with pytest.raises(ValueError, match=r"floor_k \(3\) cannot exceed the first hop's hits \(top_k=2\)"):
        EfficientRAGConfig(top_k=2, first_top_k=20, floor_k=3, first_hop_reranker="ce")
    assert EfficientRAGConfig(top_k=2, first_top_k=20, floor_k=3).first_hop_judged == 20


def test_the_reranker_folder_is_checked_early_and_hashed_by_content(folder, tmp_path, monkeypatch):
    for name in ("L", "F"):
        (tmp_path / name).mkdir()
    # The Labeler and Filter folders pass their own check here; the reranker's is the one under test.
    monkeypatch.setattr("efficientrag.models.model_folder.check_model_folder", lambda path, kind: Path(path))
    base = ["data.dataset=toy", f"work_dir={tmp_path}", f"efficientrag.labeler={tmp_path / 'L'}",
            f"efficientrag.filter={tmp_path / 'F'}"]  # fmt: skip
    assert set(check_model_folders(load_config(ExperimentConfig, None, base), "efficientrag")) == {
        "labeler",
        "filter",
    }  # unset: nothing to read or hash
    wide = [*base, "efficientrag.first_top_k=20"]
    bad = load_config(ExperimentConfig, None, [*wide, f"efficientrag.first_hop_reranker={tmp_path / 'no'}"])
    with pytest.raises(FileNotFoundError, match=r"efficientrag\.first_hop_reranker: .*no such cross-encoder"):
        check_model_folders(bad, "efficientrag")
    good = load_config(ExperimentConfig, None, [*wide, f"efficientrag.first_hop_reranker={folder}"])
    assert set(check_model_folders(good, "efficientrag")) == {"labeler", "filter", "reranker"}
    keyed = functools.partial(loop_fingerprint, answers=False, model_digests=True)
    assert keyed(EfficientRAGConfig(top_k=2))["models"] == {}
    with_ce = keyed(EfficientRAGConfig(top_k=2, first_top_k=6, first_hop_reranker=str(folder)))
    assert (
        with_ce["models"] == {"reranker": folder_digest(str(folder))} and "first_hop_reranker" not in with_ce
    )


def test_a_runs_fingerprint_holds_the_rerankers_content_not_its_path(folder, scripted, tmp_path):
    import json

    from efficientrag.data.schema import Example
    from efficientrag.eval.job_runs import evaluate_efficientrag_run
    from efficientrag.fingerprint import folder_digest

    labeler, filt = ScriptedLabeler(USEFUL), InfoOnlyFilter()
    for model, name in ((labeler, "L"), (filt, "F")):
        (tmp_path / name).mkdir()
        model.source = str(tmp_path / name)  # what from_pretrained records
    retriever = WordOverlapRetriever(bridge_corpus(), STOP)
    rag = EfficientRAG(retriever, labeler, filt, EfficientRAGConfig(top_k=KEEP, max_hops=2))
    examples = [Example(id="q0", question=Q1, answers=[], gold_chunk_ids=["alpha", "bob"])]

    def fingerprint(cfg: EfficientRAGConfig, run: str) -> dict:
        summary = evaluate_efficientrag_run(cfg, retriever, examples, tmp_path / run, rag=rag, progress=False)
        return json.loads((summary.run_dir / "run.json").read_text(encoding="utf-8"))["fingerprint"]

    plain = fingerprint(EfficientRAGConfig(top_k=KEEP, max_hops=2), "plain")
    assert "first_hop_reranker" not in plain["settings"]["efficientrag"] and "reranker" not in plain["models"]
    reranked = fingerprint(
        EfficientRAGConfig(top_k=KEEP, first_top_k=WIDE, first_hop_reranker=str(folder), max_hops=2), "ce"
    )
    assert reranked["models"]["reranker"] == folder_digest(str(folder))
    assert "first_hop_reranker" not in reranked["settings"]["efficientrag"]
    assert scripted[str(folder)].calls  # the run used the reranker it names
