"""The distillation benchmarks' own rules (issue 42): which candidate the validation numbers choose,
and which models, setting and dtype each cost variant runs."""

from __future__ import annotations

import pytest

BENCHMARK = "distill"

TEACHER = {"recall": 80.0, "all_gold": 60.0}


def _scores(**by_name):
    return {name: {"recall": r, "all_gold": g, "depth": d} for name, (d, r, g) in by_name.items()}


def test_the_shallowest_candidate_within_the_goal_is_chosen(bench):
    scores = _scores(
        **{"L2": (2, 78.5, 57.0), "L2+pairs": (2, 79.2, 58.5), "L3": (3, 79.9, 59.9), "L4": (4, 80.0, 60.0)}
    )
    chosen, why = bench.pick(scores, TEACHER, 1.0, 2.0)
    assert chosen == "L2+pairs" and "shallowest within" in why
    # L2+pairs loses 1.5 all-gold: with a 1-point budget, the 3-layer student is the shallowest left.
    assert bench.pick(scores, TEACHER, 1.0, 1.0)[0] == "L3"


def test_with_no_candidate_within_the_goal_the_best_mean_is_chosen_and_said(bench):
    scores = _scores(**{"L2": (2, 70.0, 50.0), "L3": (3, 75.0, 52.0), "L4": (4, 74.0, 54.0)})
    chosen, why = bench.pick(scores, TEACHER, 1.0, 2.0)
    assert chosen == "L4" and why.startswith("no candidate within the goal")


def test_models_folder_points_at_the_candidate_models(bench, tmp_path):
    lab, fil = tmp_path / "lab", tmp_path / "fil"
    lab.mkdir()
    fil.mkdir()
    root = bench.models_folder(tmp_path / "cand", lab, fil)
    assert (root / "labeler" / "best").resolve() == lab.resolve()
    assert (root / "filter" / "best").resolve() == fil.resolve()
    other = tmp_path / "lab2"
    other.mkdir()
    bench.models_folder(tmp_path / "cand", other, fil)  # a retrained candidate moves the link
    assert (root / "labeler" / "best").resolve() == other.resolve()


@pytest.fixture(scope="module")
def cost(request):
    import importlib.util
    import sys
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "benchmarks"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location("distill_cost", folder / "distill_cost.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(folder))


def test_cost_variants_run_whose_models_at_whose_setting_in_which_dtype(cost):
    chosen = {
        "teacher_setting": ["t", ["top_k=10"]],
        "student_setting": ["s", ["top_k=6"]],
        "teacher": {"labeler": "T/l", "filter": "T/f"},
        "student": {"labeler": "S/l", "filter": "T/f"},
    }
    assert cost.variant_overrides("teacher", chosen, 128) == [
        "top_k=10",
        "labeler=T/l",
        "filter=T/f",
        "device=cpu",
    ]
    assert cost.variant_overrides("student-bf16", chosen, 128)[-1] == "quantize=bf16"
    assert cost.variant_overrides("student-bf16", chosen, 128)[:2] == ["top_k=6", "labeler=S/l"]
    assert cost.variant_overrides("student-bf16+len", chosen, 96)[-2:] == [
        "quantize=bf16",
        "labeler_max_length=96",
    ]
    with pytest.raises(SystemExit, match="unknown variant"):
        cost.variant_overrides("student-int4", chosen, 128)


def test_candidates_with_recorded_pairs_train_as_many_steps_as_without(bench, tmp_path):
    """The +pairs candidates see other rows, not more of them: their step budget is what the
    synthesized rows alone take (rows / batch, rounded up, times epochs)."""
    from efficientrag.distill.config import DistillConfig

    (tmp_path / "labeler").mkdir()
    (tmp_path / "labeler" / "train.jsonl").write_text("{}\n" * 33 + "\n", encoding="utf-8")
    cfg = DistillConfig(train_data=str(tmp_path))
    cfg.labeler_train.batch_size, cfg.labeler_train.epochs = 16, 2
    got = bench.equal_steps(cfg, "labeler")
    assert got.labeler_train.max_steps == 6  # ceil(33 / 16) x 2
    assert cfg.labeler_train.max_steps == 0  # the config given is not changed
    assert got.filter_train == cfg.filter_train
