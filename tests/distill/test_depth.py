"""``distill --depth N`` at or over the teacher's layer count is refused before any work (issue 48:
``--depth 6`` of a 6-layer teacher started a full-size "student" without a word)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from efficientrag.cli import main
from efficientrag.models import Filter, Labeler
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import filter_rows, labeler_rows, sentences, write_rows
from efficientrag.training.distill import load_teacher_and_student, student_layers


@pytest.fixture(scope="module")
def teachers(tmp_path_factory) -> Path:
    """3-layer Labeler and Filter teachers and their training set."""
    root = tmp_path_factory.mktemp("distill-depth")
    backbone = tiny_deberta(root / "deberta", sentences(200), num_layers=3)
    torch.manual_seed(0)
    Labeler.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(root / "labeler")
    Filter.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(root / "filter")
    write_rows(root / "train" / "labeler", labeler_rows(8, seed=1), labeler_rows(4, seed=2, prefix="v"))
    write_rows(root / "train" / "filter", filter_rows(8, seed=1), filter_rows(4, seed=2, prefix="v"))
    return root


def distill(teachers: Path, work: Path, *extra: str) -> int:
    return main(
        ["distill", "--labeler", str(teachers / "labeler"), "--filter", str(teachers / "filter"),
         "--train-data", str(teachers / "train"), "--work-dir", str(work), "progress=false", *extra]
    )  # fmt: skip


@pytest.mark.parametrize("depth", ["3", "5"])
def test_a_depth_at_or_over_the_teachers_is_one_line_before_any_work(teachers, tmp_path, capsys, depth):
    work = tmp_path / "w"
    assert distill(teachers, work, "--depth", depth) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: distill depth={depth} (--depth): a student of {depth} layers is no smaller than its "
        f"teacher {teachers / 'labeler'} (3 layers) and would run exactly as slow; keep fewer layers "
        "(a depth of 1..2)"
    )
    assert not list(work.glob("labeler-*")) and not list(work.glob("data-*"))


def test_layers_that_keep_every_teacher_layer_are_refused_too(teachers, tmp_path, capsys):
    assert distill(teachers, tmp_path / "w", "layers=[0, 1, 2]", "models=[filter]") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        f"error: distill layers=[0, 1, 2]: a student of layers [0, 1, 2] is no smaller than its teacher "
        f"{teachers / 'filter'} (3 layers)"
    )


def test_the_training_loop_refuses_a_full_size_student_as_well(teachers):
    """``train ... teacher=FOLDER student_depth=N`` goes through the same check."""
    assert student_layers(6, [], 3) == [1, 3, 5] and student_layers(6, [0, 5], 0) == [0, 5]
    with pytest.raises(
        ValueError, match=r"^a student of 6 layers is no smaller than its teacher \(6 layers\)"
    ):
        student_layers(6, [], 6)
    with pytest.raises(ValueError, match=r"a student of 3 layers is no smaller .*\(a depth of 1\.\.2\)$"):
        load_teacher_and_student("labeler", str(teachers / "labeler"), [], 3)
    _, student = load_teacher_and_student("labeler", str(teachers / "labeler"), [], 2)
    assert student.network.backbone.config.num_hidden_layers == 2
