"""DRAGIN's theta from a quantile of the model's own first-round scores (tiny random Llama)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from efficientrag.baselines.active.calibrate import ThetaCalibration, calibrate_theta, theta_from_scores
from efficientrag.baselines.dragin import Dragin, DraginConfig
from efficientrag.baselines.prompts.cot_exemplars import EXEMPLAR_SETS
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk, Example
from efficientrag.llm.generator_config import HFGeneratorConfig
from efficientrag.llm.hf_generator import HFGenerator
from efficientrag.testing.tiny_models import build_tiny_causal_lm
from efficientrag.testing.word_overlap import WordOverlapRetriever

CORPUS = Corpus(
    [
        Chunk("alpha", "Alpha Film", "Alpha Film is a drama directed by Bob Stone."),
        Chunk("bob", "Bob Stone", "Bob Stone was born in Paris."),
        Chunk("madrid", "Madrid", "Madrid is the capital of Spain."),
    ]
)
EXAMPLES = [
    Example("q1", "Where was the director of Alpha Film born?", ["Paris"], ["alpha", "bob"]),
    Example("q2", "What is the capital of Spain?", ["Madrid"], ["madrid"]),
    Example("q3", "Who directed Alpha Film?", ["Bob Stone"], ["alpha"]),
    Example("q4", "In which country is Madrid?", ["Spain"], ["madrid"]),
]


@pytest.fixture(scope="module")
def gen(tmp_path_factory) -> HFGenerator:
    torch.set_num_threads(1)
    texts = [e.question + " " + e.answer for s in EXEMPLAR_SETS.values() for e in s]
    path = build_tiny_causal_lm(
        tmp_path_factory.mktemp("calib_lm"), max_positions=2048, vocab_texts=texts, vocab_size=1024
    )
    return HFGenerator.from_config(HFGeneratorConfig(model=path, batch_size=4))


def _cfg(**kw) -> DraginConfig:
    return DraginConfig(**{"exemplars": "toy", "num_exemplars": 1, "top_k": 2, "max_new_tokens": 12, **kw})


@pytest.mark.numerics
@pytest.mark.parametrize("variant", ["paper", "official"])
def test_calibrated_theta_is_the_quantile_of_first_round_maxima(gen, variant):
    method = Dragin(WordOverlapRetriever(CORPUS), gen, _cfg(variant=variant, theta=0.7))
    cal = calibrate_theta(method, EXAMPLES, quantile=0.5, batch_size=2)
    assert method.cfg.theta == 0.7  # the method's own config is restored
    assert len(cal.scores) == len(EXAMPLES) and cal.variant == variant
    assert cal.question_ids == [ex.id for ex in EXAMPLES]
    assert cal.theta == pytest.approx(float(np.quantile([s for s in cal.scores if s is not None], 0.5)))
    # Each score is the max_score a normal run logs for its first round when it does not trigger.
    plain = Dragin(WordOverlapRetriever(CORPUS), gen, _cfg(variant=variant, theta=1e9))
    logged = [p.trace["steps"][0]["max_score"] for p in plain.run_batch(EXAMPLES)]
    assert cal.scores == pytest.approx(logged, rel=1e-5)


def test_theta_file_sets_the_trigger(gen, tmp_path):
    method = Dragin(WordOverlapRetriever(CORPUS), gen, _cfg())
    scores = calibrate_theta(method, EXAMPLES, quantile=1.0).scores
    assert len(set(scores)) > 1  # the tiny model's questions score differently

    top = calibrate_theta(method, EXAMPLES, quantile=1.0).save(tmp_path / "top.json")
    never = Dragin(WordOverlapRetriever(CORPUS), gen, _cfg(theta_calibration=str(top)))
    assert never.cfg.theta == pytest.approx(max(scores))
    assert all(p.counters.get("retrieval_calls", 0) == 0 for p in never.run_batch(EXAMPLES))

    low = calibrate_theta(method, EXAMPLES, quantile=0.0)
    low.save(tmp_path / "low.json")
    assert ThetaCalibration.load(tmp_path / "low.json").theta == pytest.approx(low.theta)
    assert low.target_trigger_rate == pytest.approx(np.mean([s > min(scores) for s in scores]))
    some = Dragin(WordOverlapRetriever(CORPUS), gen, _cfg(theta_calibration=str(tmp_path / "low.json")))
    for pred, score in zip(some.run_batch(EXAMPLES), scores, strict=True):
        assert (pred.counters.get("retrieval_calls", 0) > 0) == (score > low.theta)


def test_variant_mismatch_and_bad_input_are_refused(gen, tmp_path):
    path = ThetaCalibration(theta=0.1, quantile=0.5, variant="official", scores=[0.1]).save(
        tmp_path / "c.json"
    )
    with pytest.raises(ValueError, match="variant 'official'"):
        Dragin(WordOverlapRetriever(CORPUS), gen, _cfg(variant="paper", theta_calibration=str(path)))
    with pytest.raises(FileNotFoundError, match="calibrate"):
        Dragin(WordOverlapRetriever(CORPUS), gen, _cfg(theta_calibration=str(tmp_path / "none.json")))
    with pytest.raises(ValueError, match="quantile"):
        theta_from_scores([0.1, 0.2], 1.5)
    with pytest.raises(ValueError, match="no finite scores"):
        theta_from_scores([None, None], 0.5)
    assert theta_from_scores([0.1, None, 0.3], 0.5) == pytest.approx(0.2)
