"""Token and tag heads: losses on hand-built batches, official compat semantics, pooling."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from efficientrag.models import Filter, Labeler
from efficientrag.models.inputs import IGNORE_INDEX
from efficientrag.models.modeling import compute_loss, pool_states

# Two rows, four positions. Row 0: positions 1-2 are chunk words; row 1: positions 1-3.
TOKEN_LOGITS = torch.tensor(
    [
        [[0.0, 0.0], [2.0, -1.0], [-0.5, 1.5], [0.3, 0.3]],
        [[1.0, 0.0], [0.0, 2.0], [1.0, 1.0], [-2.0, 0.5]],
    ]
)
LABELS = torch.tensor([[IGNORE_INDEX, 0, 1, IGNORE_INDEX], [IGNORE_INDEX, 1, 0, 1]])
TAG_LOGITS = torch.tensor([[2.0, -1.0], [-1.0, 1.0]])  # row 0 predicted Continue, row 1 Terminate
TAGS = torch.tensor([0, 1])


def _nll(logits, label):
    return -F.log_softmax(logits, -1)[label].item()


def test_labeler_loss_is_token_ce_over_chunk_words_plus_tag_ce():
    outputs = {"token_logits": TOKEN_LOGITS.clone().requires_grad_(), "tag_logits": TAG_LOGITS.clone()}
    parts = compute_loss(outputs, {"labels": LABELS, "tags": TAGS})
    counted = [(0, 1), (0, 2), (1, 1), (1, 2), (1, 3)]
    token = sum(_nll(TOKEN_LOGITS[r, p], LABELS[r, p]) for r, p in counted) / len(counted)
    tag = (_nll(TAG_LOGITS[0], 0) + _nll(TAG_LOGITS[1], 1)) / 2
    assert parts.token.item() == pytest.approx(token, rel=1e-6)
    assert parts.tag.item() == pytest.approx(tag, rel=1e-6)
    assert parts.total.item() == pytest.approx(token + tag, rel=1e-6)
    parts.total.backward()
    grad = outputs["token_logits"].grad
    assert grad[0, 0].abs().sum() == 0 and grad[0, 3].abs().sum() == 0  # ignored positions
    assert grad[1, 3].abs().sum() > 0


def test_filter_loss_has_no_tag_part():
    parts = compute_loss({"token_logits": TOKEN_LOGITS}, {"labels": LABELS})
    assert parts.tag is None and parts.total.item() == parts.token.item()


def test_compat_counts_only_rows_predicted_continue_with_class_weights():
    compat_labels = LABELS.clamp(min=0)  # the compat collator labels off-chunk positions 0
    weights = torch.tensor([0.5, 4.0])
    parts = compute_loss(
        {"token_logits": TOKEN_LOGITS, "tag_logits": TAG_LOGITS},
        {"labels": compat_labels, "tags": TAGS},
        compat=True,
        class_weights=weights,
    )
    # Only row 0 (argmax Continue) counts, all its positions, weighted mean.
    num = sum(weights[compat_labels[0, p]] * _nll(TOKEN_LOGITS[0, p], compat_labels[0, p]) for p in range(4))
    den = sum(weights[compat_labels[0, p]] for p in range(4))
    assert parts.token.item() == pytest.approx(float(num / den), rel=1e-6)
    tag_num = weights[0] * _nll(TAG_LOGITS[0], 0) + weights[1] * _nll(TAG_LOGITS[1], 1)
    assert parts.tag.item() == pytest.approx(float(tag_num / weights.sum()), rel=1e-6)
    # Without compat the same labels count both rows.
    plain = compute_loss(
        {"token_logits": TOKEN_LOGITS, "tag_logits": TAG_LOGITS}, {"labels": compat_labels, "tags": TAGS}
    )
    assert plain.token.item() != pytest.approx(parts.token.item())


def test_compat_with_every_row_predicted_terminate_gives_zero_token_loss_that_backpropagates():
    logits = TOKEN_LOGITS.clone().requires_grad_()
    terminate = torch.tensor([[-1.0, 1.0], [-1.0, 1.0]])
    parts = compute_loss(
        {"token_logits": logits, "tag_logits": terminate},
        {"labels": LABELS.clamp(min=0), "tags": TAGS},
        compat=True,
    )
    assert parts.token.item() == 0.0
    parts.total.backward()
    assert logits.grad is not None and logits.grad.abs().sum() == 0


@pytest.fixture(scope="module")
def labeler(minilm_path):
    return Labeler.from_backbone(minilm_path, max_length=64, device="cpu")


@pytest.mark.numerics
def test_mean_pooling_ignores_padding(labeler):
    net = labeler.network.eval()
    enc = labeler.encode([(["Who", "?"], ["Paris", "is", "big", "."])])[0]
    ids = torch.tensor(enc.input_ids, dtype=torch.long)[None]
    types = torch.tensor(enc.token_type_ids, dtype=torch.long)[None]
    pad = torch.full((1, 7), labeler.tokenizer.pad_token_id)
    with torch.no_grad():
        alone = net(ids, torch.ones_like(ids), types)
        padded = net(
            torch.cat([ids, pad], 1),
            torch.cat([torch.ones_like(ids), torch.zeros_like(pad)], 1),
            torch.cat([types, torch.zeros_like(pad)], 1),
        )
    assert torch.allclose(alone["tag_logits"], padded["tag_logits"], atol=1e-5)
    assert torch.allclose(alone["token_logits"], padded["token_logits"][:, : ids.shape[1]], atol=1e-5)


def test_first_token_pooling_reads_only_the_first_state(minilm_path):
    lab = Labeler.from_backbone(minilm_path, pooling="first", max_length=64, device="cpu")
    net = lab.network.eval()
    states = torch.randn(2, 5, net.token_head.in_features)
    mask = torch.ones(2, 5, dtype=torch.long)
    assert torch.equal(pool_states(states, mask, None, net.pooling), states[:, 0])
    mean_net = Labeler.from_backbone(minilm_path, pooling="mean", max_length=64, device="cpu").network
    mask[1, 3:] = 0
    assert torch.allclose(pool_states(states, mask, None, mean_net.pooling)[1], states[1, :3].mean(0))


def test_pair_pooling_compares_the_query_and_chunk_means(minilm_path):
    lab = Labeler.from_backbone(minilm_path, pooling="pair", max_length=64, device="cpu")
    net = lab.network.eval()
    h = net.token_head.in_features
    states = torch.randn(1, 7, h)
    # [CLS] q q [SEP] c c [SEP]
    segments = torch.tensor([[0, 1, 1, 0, 2, 2, 0]])
    pooled = pool_states(states, torch.ones(1, 7, dtype=torch.long), segments, net.pooling)
    q, c = states[0, 1:3].mean(0), states[0, 4:6].mean(0)
    assert torch.allclose(pooled[0], torch.cat([q, c, q * c, (q - c).abs()]), atol=1e-6)
    with pytest.raises(ValueError, match="segment_ids"):
        pool_states(states, torch.ones(1, 7, dtype=torch.long), None, net.pooling)
    # The encoder marks the segments, the collator carries them, and the forward pass uses them.
    enc = lab.encode([(["Who", "?"], ["Paris", "is", "big", "."])])[0]
    assert enc.segment_ids.tolist().count(1) >= 2 and enc.segment_ids.tolist().count(2) >= 4
    batch = lab.collator()([(0, enc)])
    assert torch.equal(batch["segment_ids"][0, : len(enc)], torch.tensor(enc.segment_ids, dtype=torch.long))
    pred = lab.predict([(["Who", "?"], ["Paris", "is", "big", "."])])[0]
    assert 0.0 <= pred.continue_prob <= 1.0


def test_filter_has_only_a_token_head(minilm_path):
    flt = Filter.from_backbone(minilm_path, device="cpu")
    assert flt.network.tag_head is None and flt.config.max_length == 256
    out = flt.network(torch.tensor([[101, 2000, 102]]), torch.ones(1, 3, dtype=torch.long))
    assert set(out) == {"token_logits"} and out["token_logits"].shape == (1, 3, 2)
    pred = flt.predict([["Query", ":", "unbelievably", "odd"]])[0]
    assert len(pred.word_probs) == 4 and pred.truncated_words == 0
