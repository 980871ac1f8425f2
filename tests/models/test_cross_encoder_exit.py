"""The cross-encoder's early exit: the staged model computes the whole one's logit, the heads are fit
to its own scores, a pair whose upper estimate is below the threshold leaves with its estimate and
every other pair keeps the cross-encoder's score; ``rerank`` uses the heads saved in the model's
folder, counts the pairs that left and records the heads in its run's fingerprint. A tiny random
2-layer BERT cross-encoder: seconds of CPU."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.models.cross_encoder import load_cross_encoder
from efficientrag.models.cross_encoder_exit import (
    POOLING,
    StagedCrossEncoder,
    activation,
    check_cross_encoder_split,
    score_with_exit,
    tokenize_pairs,
)
from efficientrag.models.early_exit import EARLY_EXIT_DIR, MEAN, UPPER, load_early_exit
from efficientrag.models.modeling import pool_states
from efficientrag.testing.scripted_models import ALPHA_QUESTION, OMEGA_QUESTION, bridge_corpus
from efficientrag.testing.tiny_backbones import tiny_cross_encoder
from efficientrag.testing.token_tasks import labeler_rows, sentences, write_rows
from efficientrag.training.cross_encoder_exit import fit_cross_encoder_exit, pairs_from_rows
from efficientrag.training.exit_head import ExitHeadConfig

# Floats of a staged model against the whole one's, in other batches: .ci/run runs them again as
# another machine would (AVX2 kernels, one thread).
pytestmark = pytest.mark.numerics

FIT = ExitHeadConfig(layers=[1], epochs=300, hidden=32, batch_size=32, learning_rate=3e-3, held_out=0.25)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A cross-encoder whose scores spread over (0, 1), saved, and Labeler rows as its pairs. A random
    tiny BERT's first-token states differ by ~1e-3 between inputs: its pooler is set to read them
    centred and scaled, so its score says something about the pair."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    root = tmp_path_factory.mktemp("ce-exit")
    texts = sentences(200) + [c.contents for c in bridge_corpus()] + [ALPHA_QUESTION, OMEGA_QUESTION]
    saved = tiny_cross_encoder(root / "reranker", texts)
    write_rows(root / "rows", labeler_rows(120, seed=1), labeler_rows(8, seed=2, prefix="v"))
    model = AutoModelForSequenceClassification.from_pretrained(str(saved))
    pairs = _pairs(root)
    batch = AutoTokenizer.from_pretrained(str(saved))(
        [q for q, _ in pairs], [p for _, p in pairs], padding=True, truncation=True, return_tensors="pt"
    )
    with torch.no_grad():
        first = model.bert(**batch).last_hidden_state[:, 0]
        scale = 0.5 / float(first.std(0).mean())
        width = first.shape[1]
        model.bert.pooler.dense.weight.copy_(torch.eye(width) * scale)
        model.bert.pooler.dense.bias.copy_(-first.mean(0) * scale)
        model.classifier.weight.copy_(torch.randn(1, width, generator=torch.Generator().manual_seed(0)))
        model.classifier.bias.zero_()
    model.save_pretrained(str(saved))
    return root


@pytest.fixture()
def model(folder):
    return load_cross_encoder(folder / "reranker", device="cpu")


def _pairs(folder, n=None):
    from efficientrag.training.data import read_rows

    return pairs_from_rows(read_rows(folder / "rows" / "train.jsonl", "labeler").rows)[:n]


def test_the_stages_compute_the_whole_cross_encoders_logit(model, folder):
    pairs = _pairs(folder, 12)
    inputs = tokenize_pairs(model, pairs)
    staged = StagedCrossEncoder(model, [1])
    with torch.inference_mode():
        whole = model.model(**inputs).logits[:, 0]
        split = staged.logits(staged.first(inputs), inputs["attention_mask"])
    assert torch.allclose(whole, split, atol=1e-5)
    assert torch.allclose(activation(model, whole), torch.tensor(model.predict(pairs)), atol=1e-5)
    check_cross_encoder_split(model, [1])
    with pytest.raises(InvalidArgumentError, match="1..1"):
        StagedCrossEncoder(model, [2])  # two layers: an exit after the last is none


def test_pairs_leave_where_their_upper_estimate_is_low_and_the_rest_keep_the_full_score(model, folder):
    pairs = _pairs(folder)
    heads = fit_cross_encoder_exit(model, pairs, FIT)
    held = heads.fit["layers"]["1"]["held_out"]
    assert held["pairs"] == 30 and 0.0 < held["upper_coverage"] <= 1.0
    full = [float(s) for s in model.predict(pairs)]
    assert max(full) - min(full) > 0.5  # the scores say something (the fixture's pooler)
    inputs = tokenize_pairs(model, pairs)
    with torch.inference_mode():
        states = StagedCrossEncoder(model, [1]).first(inputs)
        estimate = heads.heads[1](pool_states(states.float(), inputs["attention_mask"], None, POOLING))
    upper, mean = activation(model, estimate[:, UPPER]), activation(model, estimate[:, MEAN])
    # Half-way between two neighbouring estimates near the median, so another batch's float noise
    # cannot move a pair across it.
    ordered = sorted(float(u) for u in upper)
    k = max(range(len(ordered) // 3, 2 * len(ordered) // 3), key=lambda j: ordered[j] - ordered[j - 1])
    threshold = (ordered[k - 1] + ordered[k]) / 2
    assert ordered[k] - ordered[k - 1] > 1e-4
    got = score_with_exit(model, heads, pairs, exit_below=threshold, batch_size=7)
    left = [i for i, (_, layer) in enumerate(got) if layer is not None]
    assert 0 < len(left) < len(pairs) and all(got[i][1] == 1 for i in left)
    assert left == [i for i in range(len(pairs)) if float(upper[i]) < threshold]
    for i, (score, _) in enumerate(got):
        assert score == pytest.approx(float(mean[i]) if i in left else full[i], abs=2e-4)
    # No threshold below every estimate: the cross-encoder's own scores, nothing left early.
    whole = score_with_exit(model, heads, pairs, exit_below=0.0, batch_size=16)
    assert [layer for _, layer in whole] == [None] * len(pairs)
    # Another batch's padding moves the last float bits; the fixture's scaled pooler magnifies them.
    assert [s for s, _ in whole] == pytest.approx(full, abs=1e-4)


def test_a_bf16_cross_encoder_still_splits(folder):
    bf16 = load_cross_encoder(folder / "reranker", device="cpu", quantize="bf16")
    check_cross_encoder_split(bf16, [1])


def test_rerank_lets_pairs_leave_by_the_heads_in_the_models_folder(folder, tmp_path):
    from efficientrag.baselines.rerank import Rerank, RerankConfig
    from efficientrag.eval.job_runs import evaluate_ranked_run
    from efficientrag.experiment.run_binding import read_fingerprint
    from efficientrag.testing.word_overlap import WordOverlapRetriever

    ce = tmp_path / "reranker"
    shutil.copytree(folder / "reranker", ce)
    retriever = WordOverlapRetriever(bridge_corpus())
    cfg = RerankConfig(model=str(ce), top_n=5, device="cpu", exit_threshold=0.5)
    with pytest.raises(InvalidArgumentError, match="train exit-head --cross-encoder"):
        Rerank(retriever, None, cfg)
    model = load_cross_encoder(ce, device="cpu")
    fit_cross_encoder_exit(model, _pairs(folder), FIT).save(ce)
    method = Rerank(retriever, None, cfg)
    qs = [
        Example(id=f"q{i}", question=q, answers=[], gold_chunk_ids=[])
        for i, q in enumerate([ALPHA_QUESTION, OMEGA_QUESTION])
    ]
    preds = method.run_batch(qs)
    exited = [p.counters["exited_pairs"] for p in preds]
    # Each pair's layers: 1 where it left (the heads' layer), 2 (the whole encoder) where it did not.
    assert [p.counters["encoder_layers"] for p in preds] == [e * 1 + (5 - e) * 2 for e in exited]
    assert all(p.counters["reranked_pairs"] == 5 for p in preds) and all(0 <= e <= 5 for e in exited)
    assert all(p.scores == sorted(p.scores, reverse=True) for p in preds)
    plain = Rerank(retriever, None, RerankConfig(model=str(ce), top_n=5, device="cpu"))
    assert "exited_pairs" not in plain.run_batch(qs)[0].counters and plain.heads_digest is None
    for ex in qs:
        ex.gold_chunk_ids.append("bob")
    evaluate_ranked_run(method, qs, tmp_path / "run", ks=[2, 5], progress=False)
    fingerprint = read_fingerprint(tmp_path / "run")
    assert fingerprint["models"]["early_exit"] == method.heads_digest
    assert fingerprint["settings"]["rerank"]["exit_threshold"] == 0.5
    # An experiment's run over the same setting records the same heads before any work.
    from efficientrag.config import load_config
    from efficientrag.experiment.assembly import check_model_folders
    from efficientrag.experiment.config import ExperimentConfig

    overrides = [f"baselines.rerank.model={ce}", "baselines.rerank.exit_threshold=0.5"]
    digests = check_model_folders(load_config(ExperimentConfig, None, overrides), "rerank")
    assert digests["early_exit"] == method.heads_digest and "reranker" in digests
    # Heads fit to another model are refused: the digest binds them.
    (ce / "config.json").write_text(json.dumps({**json.loads((ce / "config.json").read_text()), "x": 1}))
    with pytest.raises(InvalidArgumentError, match="another model"):
        Rerank(retriever, None, cfg)


def test_the_command_fits_a_cross_encoders_heads(folder, tmp_path, capsys):
    from efficientrag.cli.main import main

    ce = tmp_path / "reranker"
    shutil.copytree(folder / "reranker", ce)
    argv = ["train", "exit-head", "--cross-encoder", str(ce), "--data", str(folder / "rows"), "--quiet"]
    assert main([*argv, "layers=[1]", "epochs=5", "hidden=16"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["layers"] == [1] and summary["rows"] == 120 and (ce / EARLY_EXIT_DIR).is_dir()
    assert load_early_exit(ce).pooling == POOLING
    assert main([*argv, "layers=[2]"]) == 2 and "1..1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # which model: one of the two is required
        main(["train", "exit-head", "--data", str(folder / "rows")])
    assert stop.value.code == 2 and "--cross-encoder" in capsys.readouterr().err
