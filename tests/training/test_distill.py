"""The distillation student (issue 42): cut from the teacher layer by layer with its weights, the
divergence term, the training loop with a teacher, and the saved folder through from_pretrained,
bf16 and ONNX Runtime. Tiny random DeBERTa models (4 layers): seconds of CPU."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from efficientrag.errors import ConfigError
from efficientrag.models import Filter, Labeler
from efficientrag.models.layers import encoder_layer_path, keep_layers, uniform_layers
from efficientrag.models.modeling import MODEL_INPUTS, LossParts
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import filter_rows, labeler_rows, sentences, write_rows
from efficientrag.training.config import TrainConfig, load_train_config
from efficientrag.training.distill import DistillWeights, distilled_loss, divergence

QUERY = ["Where", "was", "Alaric", "born", "?"]
CHUNKS = [
    ["Alaric", "was", "born", "in", "Vantmoor", "."],
    ["Brenna", "works", "as", "a", "painter", "in", "Osk", "and", "was", "born", "there", "."],
]


@pytest.fixture(scope="module")
def teachers(tmp_path_factory):
    """A 4-layer tiny DeBERTa Labeler and Filter (random heads) saved as folders, and their rows."""
    root = tmp_path_factory.mktemp("distill-teachers")
    backbone = tiny_deberta(root / "deberta", sentences(300), num_layers=4)
    torch.manual_seed(0)
    Labeler.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(root / "labeler")
    Filter.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(root / "filter")
    write_rows(root / "rows" / "labeler", labeler_rows(24, seed=1), labeler_rows(8, seed=2, prefix="v"))
    write_rows(root / "rows" / "filter", filter_rows(16, seed=1), filter_rows(8, seed=2, prefix="v"))
    return root


def _batch(model: Labeler) -> dict[str, torch.Tensor]:
    return model.collator()(list(enumerate(model.encode([(QUERY, c) for c in CHUNKS]))))


def test_uniform_layers_end_with_the_last_and_spread_evenly():
    assert uniform_layers(3, 6) == [1, 3, 5]
    assert uniform_layers(2, 6) == [2, 5]
    assert uniform_layers(4, 6) == [1, 2, 4, 5]
    assert uniform_layers(6, 6) == list(range(6))
    with pytest.raises(ValueError, match="student depth must be in 1..6"):
        uniform_layers(7, 6)


def test_keep_layers_copies_the_chosen_teacher_layers_and_everything_else(teachers):
    teacher = Labeler.from_pretrained(teachers / "labeler", device="cpu")
    path = encoder_layer_path(teacher.network.backbone)
    assert path == "encoder.layer"
    chosen = [0, 2, 3]
    student = keep_layers(teacher, chosen)
    assert student.network.config.encoder_config.num_hidden_layers == 3
    assert teacher.network.config.encoder_config.num_hidden_layers == 4  # the teacher is untouched
    t_state, s_state = teacher.network.state_dict(), student.network.state_dict()
    prefix = f"backbone.{path}."
    for key, tensor in s_state.items():
        if key.startswith(prefix):
            j, _, rest = key[len(prefix) :].partition(".")
            source = f"{prefix}{chosen[int(j)]}.{rest}"
        else:
            source = key  # embeddings, relative positions, heads
        assert torch.equal(tensor, t_state[source]), key
    # Layer 1 of the student is teacher layer 2, not teacher layer 1.
    rest = "attention.output.dense.weight"
    assert not torch.equal(s_state[f"{prefix}1.{rest}"], t_state[f"{prefix}1.{rest}"])
    assert {k for k in s_state if not k.startswith(prefix)} == {
        k for k in t_state if not k.startswith(prefix)
    }
    with pytest.raises(ValueError, match="increasing and distinct"):
        keep_layers(teacher, [2, 1])
    with pytest.raises(ValueError, match=r"\[4\] not in 0..3"):
        keep_layers(teacher, [0, 4])


def test_divergence_is_zero_when_the_student_equals_the_teacher(teachers):
    teacher = Labeler.from_pretrained(teachers / "labeler", device="cpu")
    batch = _batch(teacher)
    inputs = {k: batch[k] for k in MODEL_INPUTS if k in batch}
    same = keep_layers(teacher, [0, 1, 2, 3]).network.eval()
    shallow = keep_layers(teacher, [1, 3]).network.eval()
    with torch.no_grad():
        t_out, s_out, h_out = teacher.network(**inputs), same(**inputs), shallow(**inputs)
    assert float(divergence(s_out, t_out, batch, temperature=2.0)) == 0.0
    assert float(divergence(h_out, t_out, batch, temperature=2.0)) > 0.0  # random heads: small logits
    # The weights: the soft term alone when hard_weight is 0, T^2-scaled.
    hard = LossParts(total=torch.tensor(3.0), token=torch.tensor(2.0), tag=torch.tensor(1.0))
    only_soft = distilled_loss(hard, h_out, t_out, batch, DistillWeights(4.0, 0.0, 1.0))
    assert torch.allclose(only_soft.total, divergence(h_out, t_out, batch, 4.0))
    both = distilled_loss(hard, h_out, t_out, batch, DistillWeights(2.0, 0.5, 2.0))
    assert torch.allclose(both.total, 1.5 + 2.0 * divergence(h_out, t_out, batch, 2.0))


@pytest.mark.numerics
def test_student_folder_loads_quantizes_and_exports_unchanged(teachers, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("EFFICIENTRAG_ONNX_CACHE", str(tmp_path / "onnx-cache"))
    student = keep_layers(Labeler.from_pretrained(teachers / "labeler", device="cpu"), [1, 3])
    student.save_pretrained(tmp_path / "student")
    config = json.loads((tmp_path / "student" / "config.json").read_text())
    assert config["encoder_config"]["num_hidden_layers"] == 2
    pairs = [(QUERY, c) for c in CHUNKS]
    expected = student.predict(pairs)
    loaded = Labeler.from_pretrained(tmp_path / "student", device="cpu")
    assert [p.word_probs for p in loaded.predict(pairs)] == [p.word_probs for p in expected]
    bf16 = Labeler.from_pretrained(tmp_path / "student", device="cpu").quantize("bf16")
    onnx = Labeler.from_pretrained(tmp_path / "student", device="cpu").quantize("onnx")
    for variant, tolerance in ((bf16, 0.05), (onnx, 1e-4)):
        for ref, got in zip(expected, variant.predict(pairs), strict=True):
            assert abs(ref.continue_prob - got.continue_prob) < tolerance
            assert max(abs(a - b) for a, b in zip(ref.word_probs, got.word_probs, strict=True)) < tolerance


def test_distill_config_refuses_unclear_students():
    with pytest.raises(ValueError, match="exactly one of student_layers"):
        TrainConfig(model="labeler", teacher="t")
    with pytest.raises(ValueError, match="exactly one of student_layers"):
        TrainConfig(model="labeler", teacher="t", student_depth=2, student_layers=[0, 1])
    with pytest.raises(ValueError, match="need a teacher"):
        TrainConfig(model="labeler", student_depth=2)
    with pytest.raises(ValueError, match="exclude each other"):
        TrainConfig(model="labeler", teacher="t", init_from="x", student_depth=2)
    with pytest.raises(ValueError, match="^distill_temperature must be > 0, got 0$"):
        TrainConfig(model="labeler", teacher="t", student_depth=2, distill_temperature=0)
    preset = load_train_config("labeler", "configs/distill/labeler-minilm-cpu.yaml", ["teacher=t"])
    assert (preset.student_depth, preset.pooling, preset.epochs) == (4, "pair", 2)


@pytest.mark.parametrize("kind", ["labeler", "filter"])
def test_training_loop_with_a_teacher_writes_a_shallow_student(teachers, tmp_path, kind):
    from efficientrag.training.loop import train

    base = TrainConfig(
        model=kind,
        teacher=str(teachers / kind),
        student_depth=2,
        data_dir=str(teachers / "rows" / kind),
        output_dir=str(tmp_path / "run"),
        max_steps=3,
        batch_size=8,
        max_length=64,
        warmup_steps=0,
        learning_rate=1e-3,
        mixed_precision="no",
        eval_steps=0,
        save_steps=2,
        logging_steps=1,
    )
    final = train(base)
    assert final["completed"] and final["global_step"] == 3
    cls = Labeler if kind == "labeler" else Filter
    student = cls.from_pretrained(tmp_path / "run" / "best", device="cpu")
    assert student.network.config.encoder_config.num_hidden_layers == 2
    log = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert len(log) == 3 and all(r["divergence_loss"] > 0 for r in log)
    # A resumed run must keep the teacher and the layers it started with.
    with pytest.raises(ConfigError, match="student_depth: 2 -> 3"):
        train(replace(base, student_depth=3, max_steps=4), resume=True)


def test_train_distill_script_trains_a_student_and_refuses_no_teacher(teachers, tmp_path, repo_root):
    import subprocess
    import sys

    from efficientrag.cli.train import main

    with pytest.raises(ConfigError, match="distilling needs teacher"):
        main("labeler", [f"data_dir={teachers / 'rows' / 'labeler'}"], distill=True)
    out = tmp_path / "script-run"
    args = [
        "labeler",
        "-c",
        "configs/distill/labeler-minilm-cpu.yaml",
        f"teacher={teachers / 'labeler'}",
        f"data_dir={teachers / 'rows' / 'labeler'}",
        f"output_dir={out}",
        "student_layers=[0, 3]",
        "student_depth=0",
        "max_steps=2",
        "batch_size=8",
        "max_length=64",
        "warmup_steps=0",
    ]
    done = subprocess.run(
        [sys.executable, "train/distill.py", *args],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"completed": true' in done.stdout
    student = Labeler.from_pretrained(out / "best", device="cpu")
    assert student.network.config.encoder_config.num_hidden_layers == 2
    assert (
        subprocess.run([sys.executable, "train/distill.py"], cwd=repo_root, capture_output=True).returncode
        == 2
    )
