"""The sentence-transformers wrapper: same vectors as plain ST, in input order, with its settings."""

from __future__ import annotations

import numpy as np
import pytest

from efficientrag.hub import OFFLINE_DEFAULT_ENCODER
from efficientrag.retrieval.encoder import Encoder, canonical_encoder_name, resolve_device

TEXTS = [
    "Short one.",
    "A somewhat longer passage about the history of the Roman Empire and its many provinces.",
    "Mid-length sentence about coral reefs.",
    " ".join(["A very long passage that goes on and on about everything."] * 60),  # > 256 tokens
    "Émile Zola wrote Germinal in 1885; its title refers to the seventh month of the calendar.",
    "x",
    "Tokyo is the capital of Japan.",
]


@pytest.fixture(scope="module")
def encoder(minilm_path: str) -> Encoder:
    return Encoder(minilm_path, batch_size=3, show_progress=False)


@pytest.mark.numerics
def test_passages_match_plain_sentence_transformers_in_input_order(encoder):
    ours = encoder.encode_passages(TEXTS)
    plain = encoder.model.encode(TEXTS, batch_size=3, convert_to_numpy=True, show_progress_bar=False)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(ours, plain, atol=2e-5)


def test_queries_and_passages_share_one_space(encoder):
    q = encoder.encode_queries(["What is the capital of Japan?", "Who wrote Germinal?"])
    p = encoder.encode_passages(TEXTS)
    assert q.dtype == np.float32 and q.shape == (2, 384)
    assert int(np.argmax(p @ q[0])) == 6
    assert int(np.argmax(p @ q[1])) == 4


def test_empty_inputs_give_empty_matrices(encoder):
    assert encoder.encode_queries([]).shape == (0, 384)
    assert encoder.encode_passages([]).shape == (0, 384)


def test_as_shipped_minilm_is_normalized(encoder):
    assert encoder.normalize is True
    assert encoder.pooling == "mean"
    norms = np.linalg.norm(encoder.encode_passages(TEXTS), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)
    assert encoder.describe() == {
        "encoder": OFFLINE_DEFAULT_ENCODER,
        "dim": 384,
        "normalize": True,
        "pooling": "mean",
        "max_length": 256,
        "passage_prefix": "",
    }


def test_token_lengths_follow_the_tokenizer_and_truncation(encoder):
    lengths = encoder.token_lengths(TEXTS)
    expected = [
        len(ids) for ids in encoder.model.tokenizer(TEXTS, truncation=True, max_length=256)["input_ids"]
    ]
    assert lengths.tolist() == expected
    assert lengths[3] == 256
    assert lengths[5] == 3  # [CLS] x [SEP]


def test_prefixes_are_applied(encoder):
    plain = encoder.encode_queries(["capital of Japan"])
    encoder.query_prefix = "query: "
    try:
        prefixed = encoder.encode_queries(["capital of Japan"])
    finally:
        encoder.query_prefix = ""
    direct = encoder.model.encode(["query: capital of Japan"], convert_to_numpy=True)
    np.testing.assert_allclose(prefixed, direct, atol=1e-5)
    assert not np.allclose(prefixed, plain, atol=1e-3)


def test_bfloat16_compute_stays_close_to_float32(encoder):
    exact = encoder.encode_passages(TEXTS)
    encoder.compute_dtype = "bfloat16"
    try:
        fast = encoder.encode_passages(TEXTS)
    finally:
        encoder.compute_dtype = "float32"
    assert fast.dtype == np.float32
    cosines = np.sum(exact * fast, axis=1) / np.linalg.norm(fast, axis=1)
    assert cosines.min() > 0.99
    assert not np.array_equal(exact, fast)


def test_normalization_off_and_shorter_max_length(minilm_path, encoder):
    raw = Encoder(minilm_path, normalize=False, max_length=32, show_progress=False)
    assert raw.normalize is False and raw.max_length == 32
    assert raw.describe()["normalize"] is False
    assert raw.token_lengths(TEXTS).max() == 32
    short = [t for t in TEXTS if len(t) < 60]
    unnormalized = raw.encode_passages(short)
    norms = np.linalg.norm(unnormalized, axis=1)
    assert np.all(np.abs(norms - 1.0) > 0.05)
    # Same direction as the normalized model: only the length differs.
    np.testing.assert_allclose(unnormalized / norms[:, None], encoder.encode_passages(short), atol=1e-5)


def test_canonical_names(minilm_path, tmp_path):
    assert canonical_encoder_name("minilm") == OFFLINE_DEFAULT_ENCODER
    assert canonical_encoder_name("sentence-transformers/all-MiniLM-L6-v2") == OFFLINE_DEFAULT_ENCODER
    assert canonical_encoder_name(minilm_path) == OFFLINE_DEFAULT_ENCODER
    assert canonical_encoder_name("facebook/contriever-msmarco") == "facebook/contriever-msmarco"
    assert canonical_encoder_name(str(tmp_path)) == str(tmp_path.resolve())


def test_device_and_dtype_settings(minilm_path):
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in {"cpu", "cuda"}
    with pytest.raises(ValueError, match="compute_dtype"):
        Encoder(minilm_path, compute_dtype="int4")
    with pytest.raises(ValueError, match="backend='torch'"):
        Encoder(minilm_path, compute_dtype="bfloat16", backend="onnx")
