"""``efficientrag distill`` end to end on tiny DeBERTa teachers over the toy world: the teachers'
loop records the pairs it meets (killed with SIGKILL mid-record, it resumes with nothing lost or
recorded twice), the pairs become rows, both students train, and the job's stages are
fingerprinted and reused."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

from efficientrag.cli import main
from efficientrag.data.toy_world import generate_toy_world
from efficientrag.distill.config import DistillConfig
from efficientrag.distill.job import pairs_stage
from efficientrag.distill.pairs import rows_from_pairs
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.models import Filter, Labeler
from efficientrag.models.inputs import TAG_CONTINUE, TAG_TERMINATE
from efficientrag.testing.float_noise import assert_same_up_to_float_noise
from efficientrag.testing.kill_mid_run import kill_when
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import filter_rows, labeler_rows, sentences, write_rows

QUESTIONS = 16
ONE_UNIT = 1.001e-3  # a recorded word probability's last decimal (and a bit of binary slack)
SETTINGS = [
    "record_batch_size=1",
    "depth=1",
    "labeler_train.max_steps=2",
    "labeler_train.batch_size=8",
    "labeler_train.max_length=64",
    "filter_train.max_steps=2",
    "filter_train.batch_size=8",
    "filter_train.max_length=64",
    "efficientrag.max_hops=2",
    "efficientrag.top_k=3",
    "mix.labeler_ratio=1.0",
    "mix.filter_ratio=1.0",
    "progress=false",
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("distill-inputs")
    records = generate_toy_world(seed=3, num_questions=QUESTIONS)
    seen: dict[str, dict[str, str]] = {}
    for rec in records:
        for p in rec["paragraphs"]:
            seen.setdefault(
                p["title"], {"id": f"c{len(seen)}", "title": p["title"], "text": p["paragraph_text"]}
            )
    write_jsonl(root / "corpus.jsonl", seen.values())
    write_jsonl(root / "questions.jsonl", [{"id": r["id"], "question": r["question"]} for r in records])
    backbone = tiny_deberta(
        root / "deberta", sentences(300) + [c["text"] for c in seen.values()], num_layers=3
    )
    torch.manual_seed(0)
    Labeler.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(root / "labeler")
    Filter.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(root / "filter")
    write_rows(root / "train" / "labeler", labeler_rows(24, seed=1), labeler_rows(8, seed=2, prefix="v"))
    write_rows(root / "train" / "filter", filter_rows(16, seed=1), filter_rows(8, seed=2, prefix="v"))
    return root


def _args(inputs: Path, work: Path) -> list[str]:
    return [
        "distill",
        "--labeler",
        str(inputs / "labeler"),
        "--filter",
        str(inputs / "filter"),
        "--train-data",
        str(inputs / "train"),
        "--questions",
        str(inputs / "questions.jsonl"),
        "--corpus",
        str(inputs / "corpus.jsonl"),
        "--work-dir",
        str(work),
        *SETTINGS,
    ]


def _recorded(work: Path) -> int:
    for path in work.glob("pairs-*/decisions.jsonl"):
        try:
            return sum(1 for line in path.read_bytes().splitlines() if line.endswith(b"}"))
        except OSError:
            return 0
    return 0


def _config(inputs: Path, work: Path) -> DistillConfig:
    from efficientrag.config import load_config

    args = _args(inputs, work)
    flags = dict(zip(args[1:12:2], args[2:13:2], strict=True))
    overrides = [f"{k.lstrip('-').replace('-', '_')}={v}" for k, v in flags.items()]
    cfg = load_config(DistillConfig, None, [*overrides, *SETTINGS])
    cfg.check()
    return cfg


@pytest.mark.numerics
def test_recorded_pairs_resume_after_kill_with_nothing_lost_or_doubled(inputs, tmp_path, repo_root):
    work = tmp_path / "killed"
    cmd = [sys.executable, "-m", "efficientrag.cli", *_args(inputs, work)]
    killed_at, output = kill_when(cmd, repo_root, lambda: _recorded(work), at=3, timeout=300)
    assert killed_at is not None, f"the recording never started:\n{output[-3000:]}"
    assert 3 <= killed_at < QUESTIONS, f"killed after {killed_at} questions: not mid-record"
    assert not (work / "distill.json").exists()

    rows_dir, counts = pairs_stage(
        _config(inputs, work), work, {k: inputs / k for k in ("labeler", "filter")}
    )
    ref = tmp_path / "reference"
    ref_rows, ref_counts = pairs_stage(
        _config(inputs, ref), ref, {k: inputs / k for k in ("labeler", "filter")}
    )
    decisions = list(read_jsonl(rows_dir.parent / "decisions.jsonl"))
    reference = list(read_jsonl(ref_rows.parent / "decisions.jsonl"))
    ids = Counter(d["id"] for d in decisions)
    assert len(ids) == QUESTIONS and set(ids.values()) == {1}  # nothing lost, nothing twice
    assert rows_dir.parent.name == ref_rows.parent.name  # the same fingerprint
    # The killed run recorded its questions on one thread, the reference on all: the decisions hold
    # probabilities rounded to 3 and 4 decimals, which such noise can move by one unit of the last
    # decimal where it crosses a rounding boundary; words, ids and counts compare exactly.
    assert_same_up_to_float_noise(
        sorted(decisions, key=lambda d: d["id"]), sorted(reference, key=lambda d: d["id"]), abs_tol=ONE_UNIT
    )
    assert counts == ref_counts and counts["questions"] == QUESTIONS


def test_pairs_become_rows_labeled_with_the_teachers_decisions(tmp_path):
    path = tmp_path / "decisions.jsonl"
    write_jsonl(
        path,
        [
            {
                "id": "q1",
                "question": "Who?",
                "labeler": [
                    {"query": ["Who", "?"], "chunk": ["A", "B", "C"], "p": 0.7, "words": [0.9, 0.2, 0.5]},
                    {"query": ["Who", "?"], "chunk": ["D", "E"], "p": 0.3, "words": [0.9, 0.9]},
                ],
                "filter": [{"words": ["Query", ":", "x"], "probs": [0.1, 0.6, 0.5]}],
            }
        ],
    )
    labeler, filt, counts = rows_from_pairs(path)
    assert [(r["tag"], r["labels"]) for r in labeler] == [(TAG_CONTINUE, [1, 0, 1]), (TAG_TERMINATE, [0, 0])]
    assert [r["labels"] for r in filt] == [[0, 1, 1]]
    assert {r["question_id"] for r in labeler + filt} == {"teacher/q1"}
    assert counts == {"questions": 1, "continue_rows": 1, "terminate_rows": 1, "filter_rows": 1}


def test_distill_job_trains_shallow_students_and_reuses_its_stages(inputs, tmp_path):
    work = tmp_path / "job"
    assert main(_args(inputs, work)) == 0
    summary = json.loads((work / "distill.json").read_text())
    assert summary["stages"]["labeler"]["layers"] == summary["stages"]["filter"]["layers"] == 1
    for kind, cls in (("labeler", Labeler), ("filter", Filter)):
        model = cls.from_pretrained(summary[kind], device="cpu")
        assert model.network.config.encoder_config.num_hidden_layers == 1
    mixed = summary["stages"]["mix"]["counts"]["labeler"]["train"]
    assert mixed["original"] == 24 and mixed["adaptation"] > 0  # recorded rows joined the synthesized
    # A rerun finds every stage done; other layers make another student folder, same pairs.
    before = (Path(summary["labeler"]) / "model.safetensors").stat().st_mtime_ns
    assert main(_args(inputs, work)) == 0
    assert (Path(summary["labeler"]) / "model.safetensors").stat().st_mtime_ns == before
    assert main([*_args(inputs, work), "layers=[0, 2]", "models=[labeler]"]) == 0
    other = json.loads((work / "distill.json").read_text())
    assert other["labeler"] != summary["labeler"] and other["filter"] == str(inputs / "filter")
    assert other["stages"]["pairs"] == summary["stages"]["pairs"]
    assert len(list(work.glob("pairs-*"))) == 1


def test_distill_refuses_missing_inputs(inputs, tmp_path, capsys):
    assert main(["distill", "--labeler", str(inputs / "labeler")]) == 2
    assert "distill needs filter, train_data" in capsys.readouterr().err
    args = _args(inputs, tmp_path / "w")
    bad = [a if a != str(inputs / "train") else str(tmp_path / "nowhere") for a in args]
    assert main(bad) == 2
    assert "nowhere/labeler/train.jsonl" in capsys.readouterr().err
