"""A distilled toy-world Labeler keeps most of the toy quickstart's EfficientRAG recall at fewer
layers (issue 42). Real MiniLM teachers trained by the quickstart on the toy world, a student of
the presets' depth (4 of 6 layers) taught by them on the synthesized rows and the pairs their loop
met on the training questions, judged on the held-out questions at the same setting and the same
chunk count (a 6-chunk budget kept by Continue probability), so the margin is not bought with
chunks; and the same 4 layers cut from the teacher with no training, which the distillation must
beat. ``-m slow``: about a quarter of an hour on 2 cores.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from efficientrag.adapt.mix import MixConfig
from efficientrag.adapt.self_training import Question
from efficientrag.data.config import DataConfig, ToyWorldConfig
from efficientrag.distill.config import DistillConfig
from efficientrag.distill.job import inputs_of, mix_stage, pairs_stage, train_student
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.experiment.prepared_data import prepare_data
from efficientrag.models import Labeler
from efficientrag.models.layers import keep_layers, uniform_layers
from efficientrag.quickstart.job import (
    QuickstartConfig,
    QuickstartPaths,
    evaluate_efficientrag,
    run_quickstart,
)
from efficientrag.retrieval.factory import build_retriever

# Recall points below the teacher, at 4 of 6 layers. Measured (one run, 2 cores, 11 min): teacher
# 64.3, 4-layer student 66.7, the same 4 layers untrained 29.2. The 3-layer student of the earlier
# version of this test missed it by far (46.4 after 3 epochs, 41.7 after 1): on the real data too,
# 3 layers lost 13 recall points and 4 layers 3.8 (docs/performance.md).
MARGIN = 5.0
DEPTH = 4
# The loop's setting for both: low tag threshold, 5 hits a query, 6 chunks kept by probability
# and filled from the first hop's hits, so both keep the same number of chunks.
EQUAL_CHUNKS = {
    "tag_threshold": 0.05,
    "top_k": 5,
    "chunk_budget": 6,
    "budget_policy": "best",
    "fill_budget": True,
}


@pytest.mark.slow  # the toy quickstart's two MiniLM trainings, then one 4-layer student
def test_a_distilled_toy_world_student_keeps_the_quickstart_recall(tmp_path, minilm_path):
    cfg = QuickstartConfig(
        work_dir=str(tmp_path / "qs"),
        data=DataConfig(toy=ToyWorldConfig(seed=0, num_questions=120)),
        progress=False,
    )
    cfg.labeler = replace(cfg.labeler, backbone=minilm_path, epochs=2, max_length=96, save_steps=0)
    cfg.filter = replace(cfg.filter, backbone=minilm_path, epochs=6, save_steps=0)
    run_quickstart(cfg)

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
        depth=DEPTH,
        efficientrag=cfg.efficientrag,
        mix=MixConfig(labeler_ratio=1.0, filter_ratio=1.0),
        labeler_train=replace(cfg.labeler, model="labeler", epochs=3, learning_rate=1e-4),
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
    assert Labeler.from_pretrained(student / "best").network.config.encoder_config.num_hidden_layers == DEPTH
    cut = tmp_path / "cut"  # the student's starting point: the same layers, untrained
    teacher_model = Labeler.from_pretrained(teachers["labeler"])
    keep_layers(teacher_model, uniform_layers(DEPTH, 6)).save_pretrained(cut)

    held_out = [by_id[i] for i in held_out_ids]
    teacher_cfg = replace(
        cfg.efficientrag, labeler=str(teachers["labeler"]), filter=str(teachers["filter"]), **EQUAL_CHUNKS
    )
    student_cfg = replace(teacher_cfg, labeler=str(student / "best"))
    cut_cfg = replace(teacher_cfg, labeler=str(cut))
    teacher, student_result, cut_result = (
        evaluate_efficientrag(cfg, c, retriever, held_out, tmp_path / name)["retrieval"]["all"]
        for name, c in (("eval-teacher", teacher_cfg), ("eval-student", student_cfg), ("eval-cut", cut_cfg))
    )
    teacher_recall, student_recall = teacher["recall"], student_result["recall"]
    assert teacher["num_chunks"] == student_result["num_chunks"] == cut_result["num_chunks"] == 6.0
    assert teacher_recall >= 50.0  # a teacher worth distilling (the default setting kept 0.5 chunks)
    print(
        f"teacher recall {teacher_recall:.1f}, {DEPTH}-layer student {student_recall:.1f}, "
        f"the same layers untrained {cut_result['recall']:.1f}"
    )
    assert student_recall >= teacher_recall - MARGIN
    assert student_recall > cut_result["recall"]
