"""``rerank`` with a FlashRank model named ``flashrank:<name>``: a tiny model exported here to ONNX in
FlashRank's layout, loaded through FlashRank itself (the flashrank extra), never downloaded."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("flashrank")

from efficientrag.baselines.rerank import Rerank, RerankConfig  # noqa: E402
from efficientrag.config import load_config  # noqa: E402
from efficientrag.data.schema import Example  # noqa: E402
from efficientrag.eval import evaluate  # noqa: E402
from efficientrag.experiment.config import ExperimentConfig  # noqa: E402
from efficientrag.experiment.run_binding import read_fingerprint  # noqa: E402
from efficientrag.fingerprint import folder_digest  # noqa: E402
from efficientrag.models.flashrank import FlashRankScorer, flashrank_folder  # noqa: E402
from efficientrag.testing.scripted_models import ALPHA_QUESTION, OMEGA_QUESTION, bridge_corpus  # noqa: E402
from efficientrag.testing.tiny_flashrank import TINY_NAME, tiny_flashrank_model  # noqa: E402
from efficientrag.testing.token_tasks import sentences  # noqa: E402
from efficientrag.testing.word_overlap import WordOverlapRetriever  # noqa: E402

MODEL = f"flashrank:{TINY_NAME}"


@pytest.fixture(scope="module")
def flashrank_cache(tmp_path_factory) -> Path:
    texts = sentences(100) + [c.contents for c in bridge_corpus()] + [ALPHA_QUESTION, OMEGA_QUESTION]
    cache = tmp_path_factory.mktemp("flashrank") / "cache"
    tiny_flashrank_model(cache, texts)
    return cache


@pytest.fixture
def offline_cache(flashrank_cache, monkeypatch) -> Path:
    monkeypatch.setenv("EFFICIENTRAG_FLASHRANK_CACHE", str(flashrank_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return flashrank_cache


def _torch_scores(cache: Path, pairs: list[tuple[str, str]]) -> list[float]:
    """The exported model's own probabilities, computed in torch from the saved cross-encoder."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = f"{cache}-torch"
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModelForSequenceClassification.from_pretrained(source).eval()
    batch = tokenizer(
        [q for q, _ in pairs],
        [t for _, t in pairs],
        return_tensors="pt",
        padding=True,
        return_token_type_ids=True,
    )
    with torch.no_grad():
        return torch.sigmoid(model(**batch).logits.squeeze(-1)).tolist()


def test_flashrank_scores_are_the_models_probabilities_per_pair(offline_cache, monkeypatch):
    import logging

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # as in a program that configured no logging
    texts = [c.contents for c in bridge_corpus()]
    # Two questions' pairs, interleaved into runs: each run is one FlashRank request.
    pairs = [(ALPHA_QUESTION, t) for t in texts[:4]] + [(OMEGA_QUESTION, t) for t in texts[:3]]
    pairs += [(ALPHA_QUESTION, texts[5])]
    scores = FlashRankScorer(TINY_NAME).score(pairs)
    assert scores == pytest.approx(_torch_scores(offline_cache, pairs), abs=1e-5)
    assert root.handlers == []  # FlashRank's logging.basicConfig left no handler on the caller's root


def test_rerank_orders_the_top_n_by_flashranks_scores_and_binds_the_models_content(offline_cache, tmp_path):
    retriever = WordOverlapRetriever(bridge_corpus())
    method = Rerank(retriever, None, RerankConfig(model=MODEL, top_n=5))
    (pred,) = method.run_batch([Example(id="q", question=ALPHA_QUESTION, answers=[], gold_chunk_ids=[])])
    hits = retriever.search([ALPHA_QUESTION], 5)[0]
    expected = _torch_scores(offline_cache, [(ALPHA_QUESTION, h.chunk.contents) for h in hits])
    by_id = {h.id: s for h, s in zip(hits, expected, strict=True)}
    assert sorted(c.id for c in pred.chunks) == sorted(by_id)
    assert pred.scores == pytest.approx([by_id[c.id] for c in pred.chunks], abs=1e-5)
    assert pred.scores == sorted(pred.scores, reverse=True) and pred.counters["reranked_pairs"] == 5

    toy = ["data.dataset=toy", "data.toy.num_questions=12", "retriever.kind=bm25", "eval.limit=3"]
    args = [
        *toy,
        f"work_dir={tmp_path}",
        "eval.method=rerank",
        f"baselines.rerank.model={MODEL}",
        "eval.ks=[2,4]",
    ]
    summary = evaluate(load_config(ExperimentConfig, None, args), progress=False)
    assert summary.n == 3
    fingerprint = read_fingerprint(summary.run_dir)
    assert fingerprint["models"] == {"reranker": folder_digest(str(offline_cache / TINY_NAME))}


def test_a_flashrank_model_missing_offline_is_named_with_the_cache(offline_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("EFFICIENTRAG_FLASHRANK_CACHE", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match=r"empty/ms-marco-MiniLM-L-12-v2.*HF_HUB_OFFLINE"):
        flashrank_folder("ms-marco-MiniLM-L-12-v2")


@pytest.mark.parametrize(
    ("name", "match"),
    [("no-such-model", r"FlashRank has no such model \(its pairwise models: .*ms-marco-TinyBERT-L-2-v2"),
     ("rank_zephyr_7b_v1_full", "listwise LLM ranker")],
)  # fmt: skip
def test_unknown_and_listwise_flashrank_models_are_refused(offline_cache, name, match):
    with pytest.raises(ValueError, match=match):
        flashrank_folder(name)


def test_an_incomplete_flashrank_folder_names_what_is_missing(offline_cache, tmp_path, monkeypatch):
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(offline_cache / TINY_NAME, cache / TINY_NAME)
    (cache / TINY_NAME / "tokenizer.json").unlink()
    monkeypatch.setenv("EFFICIENTRAG_FLASHRANK_CACHE", str(cache))
    with pytest.raises(FileNotFoundError, match=r"missing tokenizer\.json"):
        flashrank_folder(TINY_NAME)


def test_flashrank_runs_onnx_so_a_torch_dtype_is_refused(offline_cache):
    with pytest.raises(ValueError, match=r"baselines\.rerank\.quantize=bf16.*FlashRank"):
        Rerank(WordOverlapRetriever(bridge_corpus()), None, RerankConfig(model=MODEL, quantize="bf16"))
