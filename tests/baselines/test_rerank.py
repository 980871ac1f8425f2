"""Retrieve-then-rerank baselines: ``rerank`` (a cross-encoder) and ``labeler_rerank`` (the Labeler's
Continue probability) rank the question's own top N, in one scoring batch per question batch, as
one ranked list the evaluation cuts at every K; their model folders are checked before any work
and hashed into the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from efficientrag.baselines.labeler_rerank import LabelerRerank, LabelerRerankConfig
from efficientrag.baselines.registry import METHODS
from efficientrag.baselines.rerank import Rerank, RerankConfig
from efficientrag.config import load_config
from efficientrag.data.schema import Example
from efficientrag.errors import ConfigError
from efficientrag.eval import evaluate
from efficientrag.experiment.assembly import check_model_folders
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.run_binding import read_fingerprint
from efficientrag.models.cross_encoder import check_cross_encoder_folder, load_cross_encoder
from efficientrag.testing.scripted_models import ALPHA_QUESTION, OMEGA_QUESTION, bridge_corpus
from efficientrag.testing.tiny_backbones import tiny_cross_encoder
from efficientrag.testing.token_tasks import sentences
from efficientrag.testing.word_overlap import WordOverlapRetriever


class TitleScores:
    """A scorer that gives each chunk the score of its title, and records every call."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[list[tuple[str, str]]] = []

    def predict(self, inputs, batch_size=32, show_progress_bar=None):
        self.calls.append(list(inputs))
        return [self.scores.get(text.split(":")[0], 0.0) for _, text in inputs]


class ScriptedRerank(Rerank):
    def load_scorer(self):
        return TitleScores({"Bob": 3.0, "Carla": 2.0, "Paris": 1.0, "Lyon": 1.0})


def examples(*questions: str) -> list[Example]:
    return [Example(id=f"q{i}", question=q, answers=[], gold_chunk_ids=[]) for i, q in enumerate(questions)]


def test_rerank_sorts_the_questions_own_top_n_by_the_score_in_one_batch():
    retriever = WordOverlapRetriever(bridge_corpus())
    method = ScriptedRerank(retriever, None, RerankConfig(top_n=4))
    preds = method.run_batch(examples(ALPHA_QUESTION, OMEGA_QUESTION))
    searched = retriever.search([ALPHA_QUESTION, OMEGA_QUESTION], 4)
    assert len(method.scorer.calls) == 1 and len(method.scorer.calls[0]) == 8  # both questions at once
    for pred, hits in zip(preds, searched, strict=True):
        assert pred.ranked and sorted(c.id for c in pred.chunks) == sorted(h.id for h in hits)
        assert pred.scores == sorted(pred.scores, reverse=True)
        # Equal scores keep the search's order; the trace says where each chunk was found.
        assert [hits[i].id for i in pred.trace["search_rank"]] == [c.id for c in pred.chunks]
        assert pred.counters["retrieval_calls"] == 1 and pred.counters["reranked_pairs"] == 4
    assert [c.id for c in preds[0].chunks][:2] == ["bob", "carla"]
    ties = [c.id for c, s in zip(preds[0].chunks, preds[0].scores, strict=True) if s == 0.0]
    assert ties == [h.id for h in searched[0] if h.id not in ("bob", "carla", "paris", "lyon")]
    # What the scorer read: the question and the chunk's indexed text.
    assert method.scorer.calls[0][0] == (ALPHA_QUESTION, searched[0][0].chunk.contents)


def test_rank_fusion_mixes_the_search_order_with_the_rerankers():
    retriever = WordOverlapRetriever(bridge_corpus())
    plain = ScriptedRerank(retriever, None, RerankConfig(top_n=6))
    fused = ScriptedRerank(retriever, None, RerankConfig(top_n=6, fusion="rrf", rrf_k=1))
    hits = retriever.search([ALPHA_QUESTION], 6)[0]
    (p,), (f,) = plain.run_batch(examples(ALPHA_QUESTION)), fused.run_batch(examples(ALPHA_QUESTION))
    reranked = [c.id for c in p.chunks]
    # Computed here from the two orders alone: 1 / (k + 1 + rank) in each, summed (k = 1).
    by_hand = {h.id: 1 / (2 + i) + 1 / (2 + reranked.index(h.id)) for i, h in enumerate(hits)}
    expected = sorted(by_hand, key=lambda cid: (-by_hand[cid], [h.id for h in hits].index(cid)))
    assert [c.id for c in f.chunks] == expected != reranked
    assert f.scores == pytest.approx([by_hand[c] for c in expected])
    assert [hits[i].id for i in f.trace["search_rank"]] == expected
    with pytest.raises(ValueError, match="rrf_k must be >= 1"):
        RerankConfig(rrf_k=0)
    with pytest.raises(ValueError, match="fusion must be one of"):
        LabelerRerankConfig(fusion="sum")


def test_both_rerankers_are_registered_methods_with_their_own_sections():
    cfg = load_config(
        ExperimentConfig, None, ["baselines.rerank.top_n=50", "baselines.labeler_rerank.top_n=7"]
    )
    assert METHODS["rerank"] is Rerank and METHODS["labeler_rerank"] is LabelerRerank
    assert cfg.baselines.rerank.top_n == 50 and cfg.baselines.labeler_rerank.top_n == 7
    with pytest.raises(ConfigError, match="top_n"):
        load_config(ExperimentConfig, None, ["baselines.rerank.top_n=0"])


def test_a_method_without_its_model_fails_before_any_work(tmp_path):
    cfg = load_config(ExperimentConfig, None, ["data.dataset=toy", f"work_dir={tmp_path}"])
    with pytest.raises(ConfigError, match=r"baselines\.rerank\.model"):
        check_model_folders(cfg, "rerank")
    with pytest.raises(ConfigError, match=r"baselines\.labeler_rerank\.labeler"):
        check_model_folders(cfg, "labeler_rerank")
    missing = load_config(ExperimentConfig, None, [f"baselines.rerank.model={tmp_path / 'nope'}"])
    with pytest.raises(FileNotFoundError, match=r"baselines\.rerank\.model: .*nope: no such cross-encoder"):
        check_model_folders(missing, "rerank")
    with pytest.raises(ValueError, match=r"baselines\.rerank\.model is empty"):
        Rerank(WordOverlapRetriever(bridge_corpus()), None, RerankConfig())


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> Path:
    texts = sentences(100) + [c.contents for c in bridge_corpus()] + [ALPHA_QUESTION, OMEGA_QUESTION]
    return tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "reranker", texts)


def test_rerank_ranks_by_the_saved_cross_encoders_own_scores(cross_encoder):
    from sentence_transformers import CrossEncoder

    retriever = WordOverlapRetriever(bridge_corpus())
    method = Rerank(retriever, None, RerankConfig(model=str(cross_encoder), top_n=5, device="cpu"))
    (pred,) = method.run_batch(examples(ALPHA_QUESTION))
    plain = CrossEncoder(str(cross_encoder), device="cpu")
    hits = retriever.search([ALPHA_QUESTION], 5)[0]
    expected = plain.predict([(ALPHA_QUESTION, h.chunk.contents) for h in hits])
    by_id = {h.id: float(s) for h, s in zip(hits, expected, strict=True)}
    # Each chunk carries its own cross-encoder score (to float noise: another batch shape), best first.
    assert sorted(c.id for c in pred.chunks) == sorted(by_id)
    assert pred.scores == pytest.approx([by_id[c.id] for c in pred.chunks], abs=1e-5)
    assert pred.scores == sorted(pred.scores, reverse=True) and len(set(pred.scores)) > 1


def test_both_rerankers_run_at_the_loops_dtype_when_asked(cross_encoder, tmp_path):
    import torch

    from efficientrag.models import Labeler

    retriever = WordOverlapRetriever(bridge_corpus())
    method = Rerank(
        retriever, None, RerankConfig(model=str(cross_encoder), top_n=5, device="cpu", quantize="bf16")
    )
    method.setup()
    assert {p.dtype for p in method.scorer.parameters()} == {torch.bfloat16}
    (pred,) = method.run_batch(examples(ALPHA_QUESTION))
    plain = Rerank(retriever, None, RerankConfig(model=str(cross_encoder), top_n=5, device="cpu"))
    plain.setup()
    (ref,) = plain.run_batch(examples(ALPHA_QUESTION))
    # bf16 moves the scores by its own precision, no more.
    by_id = dict(zip([c.id for c in ref.chunks], ref.scores, strict=True))
    assert [by_id[c.id] for c in pred.chunks] == pytest.approx(pred.scores, abs=0.02)
    with pytest.raises(ValueError, match="quantize must be one of"):
        RerankConfig(quantize="int8")
    with pytest.raises(ValueError, match="'none' or 'bf16'"):
        load_cross_encoder(cross_encoder, quantize="int4")
    labeler = tmp_path / "labeler"
    backbone = next(p for p in Path(cross_encoder).parent.iterdir() if p.name.endswith("-backbone"))
    Labeler.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(labeler)
    ranked = LabelerRerank(
        retriever, None, LabelerRerankConfig(labeler=str(labeler), device="cpu", quantize="bf16")
    )
    ranked.setup()
    assert ranked.scorer.quantize_mode == "bf16"


def test_a_pretrained_cross_encoder_is_named_by_its_hub_id(cross_encoder, tmp_path, monkeypatch):
    """Offline (the tests' HF_HUB_OFFLINE=1) a Hub id resolves through the Hub cache alone, scores as
    the same saved folder does, and the run hashes the snapshot's content."""
    import shutil

    import huggingface_hub.constants

    from efficientrag.fingerprint import folder_digest

    cache, commit = tmp_path / "hub", "0123456789abcdef0123456789abcdef01234567"
    repo = cache / "models--someone--tiny-reranker"
    shutil.copytree(cross_encoder, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    assert check_cross_encoder_folder("someone/tiny-reranker") == repo / "snapshots" / commit
    retriever = WordOverlapRetriever(bridge_corpus())
    by_id = Rerank(retriever, None, RerankConfig(model="someone/tiny-reranker", top_n=5, device="cpu"))
    by_path = Rerank(retriever, None, RerankConfig(model=str(cross_encoder), top_n=5, device="cpu"))
    by_id.setup(), by_path.setup()
    (a,), (b,) = by_id.run_batch(examples(ALPHA_QUESTION)), by_path.run_batch(examples(ALPHA_QUESTION))
    assert [c.id for c in a.chunks] == [c.id for c in b.chunks] and a.scores == pytest.approx(b.scores)
    cfg = load_config(ExperimentConfig, None, ["baselines.rerank.model=someone/tiny-reranker"])
    assert check_model_folders(cfg, "rerank") == {"reranker": folder_digest(cross_encoder)}
    with pytest.raises(FileNotFoundError, match="'someone/missing' is not a local folder.*cache"):
        check_cross_encoder_folder("someone/missing")


def test_a_cross_encoder_folder_is_checked_before_it_is_loaded(cross_encoder, tmp_path):
    assert check_cross_encoder_folder(cross_encoder) == cross_encoder
    with pytest.raises(FileNotFoundError, match="no such cross-encoder folder"):
        check_cross_encoder_folder(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        check_cross_encoder_folder(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no config.json"):
        check_cross_encoder_folder(tmp_path / "empty")
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04")
    with pytest.raises(ValueError, match=r"pickled \(pytorch_model.bin\), which this package never loads"):
        load_cross_encoder(pickled)
    torn = tmp_path / "torn"
    torn.mkdir()
    (torn / "config.json").write_text((cross_encoder / "config.json").read_text())
    (torn / "model.safetensors").write_bytes((cross_encoder / "model.safetensors").read_bytes()[:100])
    with pytest.raises(ValueError, match="incomplete or corrupt safetensors"):
        check_cross_encoder_folder(torn)


class ContinueByTitle:
    """A Labeler double: the Continue probability of a pair is its chunk's, by the chunk's first word."""

    def __init__(self, probs: dict[str, float]) -> None:
        self.probs = probs
        self.calls: list[list] = []

    def predict(self, pairs, batch_size=None, max_length=None):
        from types import SimpleNamespace

        self.calls.append(list(pairs))
        return [SimpleNamespace(continue_prob=self.probs.get(chunk[0], 0.0)) for _, chunk in pairs]


class ScriptedLabelerRerank(LabelerRerank):
    def load_scorer(self):
        return ContinueByTitle({"Carla": 0.9, "Alpha": 0.8, "Bob": 0.7})


def test_labeler_rerank_ranks_by_continue_probability_over_the_loops_words():
    method = ScriptedLabelerRerank(WordOverlapRetriever(bridge_corpus()), None, LabelerRerankConfig(top_n=6))
    (pred,) = method.run_batch(examples(ALPHA_QUESTION))
    assert [c.id for c in pred.chunks][:3] == ["carla", "alpha", "bob"] and pred.scores[:3] == [0.9, 0.8, 0.7]
    query_words, chunk_words = method.scorer.calls[0][0]
    assert query_words == ["Where", "was", "the", "director", "of", "Alpha", "film", "born", "?"]
    assert chunk_words[:2] == ["Alpha", ":"]  # "{title}: {text}", split as the loop splits it
    assert pred.counters["reranked_pairs"] == 6


def test_eval_runs_rerank_at_every_k_and_binds_the_models_content(cross_encoder, tmp_path):
    toy = ["data.dataset=toy", "data.toy.num_questions=12", "retriever.kind=bm25", "eval.limit=4"]
    args = [*toy, f"work_dir={tmp_path}", "eval.method=rerank", f"baselines.rerank.model={cross_encoder}",
            "baselines.rerank.top_n=8", "baselines.rerank.device=cpu", "eval.ks=[2,4,8]"]  # fmt: skip
    summary = evaluate(load_config(ExperimentConfig, None, args), progress=False)
    assert summary.n == 4 and set(summary["retrieval"]) == {"2", "4", "8"}
    assert summary["retrieval"]["8"]["num_chunks"] == 8.0
    fingerprint = read_fingerprint(summary.run_dir)
    assert set(fingerprint["models"]) == {"reranker"}
    assert "model" not in fingerprint["settings"]["baselines.rerank"]  # the content, not the path


def test_a_rerank_job_run_resumes_only_for_the_same_model_and_settings(cross_encoder, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    from efficientrag.eval.job_runs import evaluate_ranked_run

    retriever = WordOverlapRetriever(bridge_corpus())
    qs = examples(ALPHA_QUESTION, OMEGA_QUESTION)
    for ex in qs:
        ex.gold_chunk_ids.append("bob" if ex.question == ALPHA_QUESTION else "carla")
    method = Rerank(retriever, None, RerankConfig(model=str(cross_encoder), top_n=5, device="cpu"))
    first = evaluate_ranked_run(method, qs, tmp_path / "run", ks=[2, 5], progress=False)
    assert first["n"] == 2 and first["retrieval"]["5"]["recall"] == 100.0
    fingerprint = read_fingerprint(tmp_path / "run")
    assert fingerprint["method"] == "rerank" and set(fingerprint["models"]) == {"reranker"}
    recorded = fingerprint["settings"]["rerank"]
    assert recorded["top_n"] == 5 and recorded["device"] == "cpu"
    assert "top_k" not in recorded and "max_new_tokens" not in recorded  # the answer call's alone
    # The same inputs resume the run: nothing is scored again.
    method.scorer = TitleScores({})
    evaluate_ranked_run(method, qs, tmp_path / "run", ks=[2, 5], progress=False)
    assert method.scorer.calls == []
    # Another model's weights under the same path make it another run, scored again.
    other = tmp_path / "other"
    shutil.copytree(cross_encoder, other)
    weights = load_file(other / "model.safetensors")
    save_file(
        {k: v + 0.01 if v.is_floating_point() else v for k, v in weights.items()}, other / "model.safetensors"
    )
    changed = Rerank(retriever, None, RerankConfig(model=str(other), top_n=5, device="cpu"))
    changed.scorer = TitleScores({})
    evaluate_ranked_run(changed, qs, tmp_path / "run", ks=[2, 5], progress=False)
    assert len(changed.scorer.calls) == 1
    assert read_fingerprint(tmp_path / "run")["models"] != fingerprint["models"]
