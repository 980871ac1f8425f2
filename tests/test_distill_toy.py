"""A distilled toy-world Labeler keeps the toy quickstart's EfficientRAG recall at half the layers
(issue 42). Real MiniLM teachers trained by the quickstart on the toy world, a 3-layer student
taught by them on the synthesized rows and the pairs their loop met on the training questions,
both judged on the held-out questions at the same setting. ``-m slow``: minutes on 2 cores."""

from __future__ import annotations

from dataclasses import replace

import pytest

from efficientrag.adapt.mix import MixConfig
from efficientrag.adapt.self_training import Question
from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.distill.config import DistillConfig
from efficientrag.distill.job import inputs_of, mix_stage, pairs_stage, train_student
from efficientrag.experiment import ExperimentConfig, prepare_data
from efficientrag.models import Labeler
from efficientrag.quickstart import QuickstartConfig, QuickstartPaths, evaluate_efficientrag, run_quickstart
from efficientrag.retrieval.factory import build_retriever

MARGIN = 5.0  # recall points below the teacher, at fewer layers


@pytest.mark.slow  # the toy quickstart's two MiniLM trainings, then one 3-layer student
def test_a_distilled_toy_world_student_keeps_the_quickstart_recall(tmp_path, minilm_path):
    cfg = QuickstartConfig(
        work_dir=str(tmp_path / "qs"),
        data=DataConfig(toy=ToyWorldConfig(seed=0, num_questions=120)),
        progress=False,
    )
    cfg.labeler = replace(cfg.labeler, backbone=minilm_path, epochs=2, max_length=96, save_steps=0)
    cfg.filter = replace(cfg.filter, backbone=minilm_path, epochs=6, save_steps=0)
    summary = run_quickstart(cfg)
    teacher_recall = summary["efficientrag"]["recall"]

    paths = QuickstartPaths(tmp_path / "qs")
    exp = ExperimentConfig(work_dir=cfg.work_dir, data=cfg.data, retriever=cfg.retriever)
    pooled = prepare_data(exp)
    retriever = build_retriever(cfg.retriever, pooled.corpus, exp.index_dir, show_progress=False)
    train_ids = set((paths.split / "train_ids.txt").read_text().split())
    held_out_ids = (paths.split / "eval_ids.txt").read_text().split()
    by_id = {ex.id: ex for ex in pooled.examples}
    teachers = {"labeler": paths.labeler / "best", "filter": paths.filter / "best"}
    dcfg = DistillConfig(
        work_dir=str(tmp_path / "distill"),
        labeler=str(teachers["labeler"]),
        filter=str(teachers["filter"]),
        train_data=str(paths.synth),
        models=["labeler"],
        depth=3,
        efficientrag=cfg.efficientrag,
        mix=MixConfig(labeler_ratio=1.0, filter_ratio=1.0),
        labeler_train=replace(cfg.labeler, model="labeler", epochs=1, learning_rate=1e-4),
        progress=False,
    )
    dcfg.check()
    questions = [Question(ex.id, ex.question) for ex in pooled.examples if ex.id in train_ids]
    rows, counts = pairs_stage(
        dcfg, tmp_path / "distill", teachers, questions=questions, corpus=pooled.corpus, retriever=retriever
    )
    assert counts["questions"] == len(questions) and counts["continue_rows"] > 0
    inputs = inputs_of(dcfg, teachers)
    data, _ = mix_stage(dcfg, tmp_path / "distill", inputs, [rows])
    student, _ = train_student(dcfg, "labeler", teachers, inputs, data, tmp_path / "distill")
    assert Labeler.from_pretrained(student / "best").network.config.encoder_config.num_hidden_layers == 3

    rag_cfg = replace(cfg.efficientrag, labeler=str(student / "best"), filter=str(teachers["filter"]))
    held_out = [by_id[i] for i in held_out_ids]
    result = evaluate_efficientrag(cfg, rag_cfg, retriever, held_out, tmp_path / "eval-student")
    student_recall = result["retrieval"]["all"]["recall"]
    print(f"teacher recall {teacher_recall:.1f}, 3-layer student {student_recall:.1f}")
    assert student_recall >= teacher_recall - MARGIN
