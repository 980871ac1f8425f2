"""The Labeler's early exit: the encoder run in stages computes what it computes whole, a pair whose
upper estimate is below the threshold leaves at the first exit layer where it is, with the expected
estimate, and the rest are the full Labeler's judgement; the heads are fit to the Labeler's own
outputs, saved beside it and refused over another Labeler. Tiny random DeBERTa Labelers (4 layers):
seconds of CPU."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest
import torch

from efficientrag.errors import InvalidArgumentError
from efficientrag.models import Labeler
from efficientrag.models.early_exit import (
    EARLY_EXIT_DIR,
    MEAN,
    UPPER,
    StagedEncoder,
    check_split,
    early_exit_digest,
    load_early_exit,
)
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import labeler_rows, sentences, write_rows
from efficientrag.training.exit_head import ExitHeadConfig, collect_features, fit_exit_head

FIT = ExitHeadConfig(layers=[1, 2], epochs=300, hidden=32, batch_size=32, learning_rate=3e-3, held_out=0.25)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A 4-layer Labeler whose tag head says something (its last layer scaled up), saved, and rows."""
    root = tmp_path_factory.mktemp("early-exit")
    backbone = tiny_deberta(root / "deberta", sentences(300), num_layers=4)
    torch.manual_seed(0)
    labeler = Labeler.from_backbone(str(backbone), max_length=64, pooling="pair", device="cpu")
    with torch.no_grad():
        labeler.network.tag_head[0].weight.mul_(20.0)
        labeler.network.tag_head[-1].weight.mul_(40.0)
    labeler.save_pretrained(root / "labeler")
    write_rows(root / "rows", labeler_rows(96, seed=1), labeler_rows(16, seed=2, prefix="v"))
    return root


@pytest.fixture()
def labeler(folders):
    return Labeler.from_pretrained(folders / "labeler", device="cpu")


def _pairs(n: int = 24, seed: int = 5) -> list[tuple[list[str], list[str]]]:
    return [(r.query_words, r.chunk_words) for r in labeler_rows(n, seed=seed)]


def test_the_stages_compute_what_the_whole_encoder_computes(labeler):
    batch = labeler.collator()(list(enumerate(labeler.encode(_pairs(6)))))
    net = labeler.network.eval()
    inputs = net.backbone_inputs(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
    with torch.no_grad():
        whole = net.backbone(**inputs).last_hidden_state
        for cuts in ([1], [2], [3], [1, 3], [1, 2, 3]):
            staged = StagedEncoder(net.backbone, cuts)
            states = staged.first(inputs)
            for k in range(1, len(cuts) + 1):
                states = staged.next(k, states, batch["attention_mask"])
            assert len(staged.stages) == len(cuts) + 1
            assert torch.allclose(states, whole, atol=1e-5), cuts
    # The stages share the encoder's weights and leave it whole.
    assert len(net.backbone.encoder.layer) == 4
    assert staged.stages[0].encoder.layer[0] is net.backbone.encoder.layer[0]
    assert staged.stages[3].encoder.layer[0] is net.backbone.encoder.layer[3]


def test_an_encoder_whose_layers_depend_on_their_place_is_refused(labeler):
    from transformers.models.deberta_v2.modeling_deberta_v2 import ConvLayer

    config = copy.deepcopy(labeler.network.backbone.config)
    config.conv_kernel_size, config.conv_act = 3, "gelu"
    torch.manual_seed(1)
    labeler.network.backbone.encoder.conv = ConvLayer(config)  # applied after the first layer only
    with pytest.raises(InvalidArgumentError, match="cannot be split"):
        check_split(labeler.network, [2])
    for bad in ([4], [2, 1], [], [0]):
        with pytest.raises(InvalidArgumentError, match=r"increasing and in 1\.\.3"):
            StagedEncoder(labeler.network.backbone, bad)


def test_the_heads_are_fit_to_the_labelers_own_scores(labeler, folders):
    from efficientrag.training.data import read_rows

    rows = read_rows(folders / "rows" / "train.jsonl", "labeler").rows
    features, targets = collect_features(labeler, rows, [1, 2])
    full = labeler.predict([(r.query_words, r.chunk_words) for r in rows])
    expected = torch.tensor([p.continue_prob for p in full])
    assert torch.allclose(torch.sigmoid(targets), expected, atol=1e-4)  # the target is the Labeler's
    assert set(features) == {1, 2}
    assert features[2].shape == (len(rows), 4 * labeler.network.token_head.in_features)
    assert not torch.allclose(features[1], features[2])
    assert float(targets.std()) > 0.5  # the scaled tag head gives the heads something to learn

    early_exit = fit_exit_head(labeler, rows, FIT)
    assert early_exit.layers == [1, 2] and early_exit.quantile == 0.9
    constant = float((targets - targets.mean()).abs().mean())
    for layer in ("1", "2"):
        train = early_exit.fit["layers"][layer]["train"]
        assert train["logit_mae"] < 0.5 * constant, layer
        # The upper output is a quantile: most full logits lie under it, not half of them.
        assert train["upper_coverage"] >= 0.75, layer
    assert early_exit.fit["layers"]["2"]["held_out"]["pairs"] == 24


def test_pairs_leave_at_the_first_layer_where_their_upper_estimate_is_low(labeler, folders):
    from efficientrag.training.data import read_rows

    early_exit = fit_exit_head(labeler, read_rows(folders / "rows" / "train.jsonl", "labeler").rows, FIT)
    pairs = _pairs()
    full = labeler.predict(pairs)
    nobody = labeler.predict(pairs, exit_below=0.0)
    assert all(p.exited_at is None for p in nobody)
    for a, b in zip(full, nobody, strict=True):
        assert b.continue_prob == pytest.approx(a.continue_prob, abs=1e-5)
        assert b.word_probs == pytest.approx(a.word_probs, abs=1e-5)

    features, _ = collect_features(labeler, [_row(q, c) for q, c in pairs], [1, 2])
    with torch.no_grad():
        est = {layer: torch.sigmoid(early_exit.heads[layer](features[layer])) for layer in (1, 2)}
    threshold = _gap_threshold(est[1][:, UPPER].tolist(), est[2][:, UPPER].tolist())
    mixed = labeler.predict(pairs, exit_below=threshold, batch_size=5)
    for i, (a, b) in enumerate(zip(full, mixed, strict=True)):
        first = 1 if est[1][i, UPPER] < threshold else 2 if est[2][i, UPPER] < threshold else None
        assert b.exited_at == first, i
        if first is None:  # went on from the stored states: the full judgement
            assert b.continue_prob == pytest.approx(a.continue_prob, abs=1e-5)
            assert b.word_probs == pytest.approx(a.word_probs, abs=1e-5)
        else:
            assert b.continue_prob == pytest.approx(float(est[first][i, MEAN]), abs=1e-5)
            assert b.word_probs == [0.0] * len(pairs[i][1])
    assert {p.exited_at is None for p in mixed} == {True, False}  # some left, some went on

    with pytest.raises(InvalidArgumentError, match=r"exit_below must be in \[0, 1\]"):
        labeler.predict(pairs, exit_below=1.5)
    bf16 = Labeler.from_pretrained(folders / "labeler", device="cpu").quantize("bf16")
    bf16.attach_early_exit(early_exit)
    staged, whole = bf16.predict(pairs, exit_below=0.0), bf16.predict(pairs)
    assert [p.continue_prob for p in staged] == pytest.approx([p.continue_prob for p in whole], abs=1e-6)
    int8 = Labeler.from_pretrained(folders / "labeler", device="cpu").quantize("int8")
    with pytest.raises(InvalidArgumentError, match="runs as int8"):
        int8.predict(pairs, exit_below=0.1)
    labeler.onnx = SimpleNamespace(mode="onnx")
    with pytest.raises(InvalidArgumentError, match="runs as onnx"):
        labeler.predict(pairs, exit_below=0.1)


def _gap_threshold(*estimates: list[float]) -> float:
    """A threshold near the middle of every layer's estimates, in the widest gap between them, so
    the last float bits of another batch shape cannot move a pair across it."""
    ordered = sorted(x for layer in estimates for x in layer)
    middle = range(len(ordered) // 4, 3 * len(ordered) // 4)
    gap = max(middle, key=lambda i: ordered[i + 1] - ordered[i])
    return (ordered[gap] + ordered[gap + 1]) / 2


def test_a_saved_head_loads_with_its_labeler_and_is_refused_over_another(labeler, folders, tmp_path):
    from efficientrag.training.data import read_rows

    rows = read_rows(folders / "rows" / "train.jsonl", "labeler").rows
    own = tmp_path / "labeler"
    labeler.save_pretrained(own)
    with pytest.raises(InvalidArgumentError, match="no early-exit heads"):
        Labeler.from_pretrained(own, device="cpu").predict(_pairs(2), exit_below=0.1)
    with pytest.raises(InvalidArgumentError, match="train exit-head"):
        early_exit_digest(own)

    early_exit = fit_exit_head(labeler, rows, FIT)
    saved = early_exit.save(own)
    assert saved == own / EARLY_EXIT_DIR and json.loads((saved / "config.json").read_text())["layers"] == [
        1,
        2,
    ]
    before = labeler.predict(_pairs(), exit_below=0.3)
    after = Labeler.from_pretrained(own, device="cpu").predict(_pairs(), exit_below=0.3)
    assert [p.exited_at for p in after] == [p.exited_at for p in before]
    assert [p.continue_prob for p in after] == pytest.approx([p.continue_prob for p in before], abs=1e-6)

    # The Labeler's files are unchanged by the head beside them; another Labeler's folder refuses it.
    other = tmp_path / "other"
    with torch.no_grad():
        labeler.network.token_head.bias.add_(0.1)
    labeler.save_pretrained(other)
    (other / EARLY_EXIT_DIR).mkdir()
    for name in ("config.json", "model.safetensors"):
        (other / EARLY_EXIT_DIR / name).write_bytes((saved / name).read_bytes())
    with pytest.raises(InvalidArgumentError, match="fit to another model"):
        load_early_exit(other)
    meta = json.loads((saved / "config.json").read_text())
    del meta["layers"]
    (saved / "config.json").write_text(json.dumps(meta))
    with pytest.raises(InvalidArgumentError, match=r"missing layers\); fit the heads again"):
        load_early_exit(own)


def test_the_command_fits_and_saves_the_head(folders, tmp_path, capsys):
    from efficientrag.cli.main import main

    target = tmp_path / "labeler"
    Labeler.from_pretrained(folders / "labeler", device="cpu").save_pretrained(target)
    argv = ["train", "exit-head", "--labeler", str(target), "--data", str(folders / "rows"), "--quiet"]
    assert main([*argv, "layers=[3]", "epochs=5", "hidden=16"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["layers"] == [3] and summary["rows"] == 96 and set(summary["held_out"]) == {"3"}
    assert load_early_exit(target).layers == [3]
    assert main([*argv, "layers=[0]"]) == 2
    assert "layers" in capsys.readouterr().err
    assert main([*argv, "layers=[4]"]) == 2  # the encoder has 4 layers: an exit after the last is none
    assert "1..3" in capsys.readouterr().err
    assert main(["train", "exit-head", "--labeler", str(target), "--data", str(tmp_path / "none")]) == 2


def _row(query, chunk):
    from efficientrag.models.inputs import TAG_TERMINATE, LabelerRow

    return LabelerRow(
        id="x",
        question_id="q",
        query_words=query,
        chunk_words=chunk,
        labels=[0] * len(chunk),
        tag=TAG_TERMINATE,
    )


def test_the_loops_own_pairs_become_rows_to_fit_on():
    from efficientrag.training.exit_head import rows_from_traces

    hits = [
        {"id": "c1", "tag": "continue"},
        {"id": "c2", "seen": True},  # not judged for this query
        {"id": "c3", "tag": "terminate", "exited_at": 2},  # an estimate, not the Labeler's judgement
    ]
    record = {
        "id": "q7",
        "trace": {
            "hops": [
                {"queries": ["Who directed Alpha?"], "hits": [hits]},
                {"queries": ["Bob Stone", "Who directed Alpha?"], "hits": [[{"id": "c1", "tag": "t"}], hits]},
            ]
        },
    }
    rows = rows_from_traces([record], lambda cid: [cid, "words"])
    assert [(r.query_words, r.chunk_words) for r in rows] == [
        (["Who", "directed", "Alpha", "?"], ["c1", "words"]),
        (["Bob", "Stone"], ["c1", "words"]),
    ]
    assert rows[0].question_id == "q7" and rows[0].labels == [0, 0] and rows[0].chunk_id == "c1"
