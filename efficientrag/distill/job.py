"""``efficientrag distill``: shallower students of trained Labeler/Filter models, resumable stage by stage.

Stages, each in a folder named by the fingerprint of everything it depends on (a rerun with the
same inputs continues or skips it; one with other inputs never reuses it):

1. ``pairs-<fp>/decisions.jsonl``: with ``questions``, the teachers' loop over them, every
   decision recorded (appended batch by batch); ``rows-<fp>/`` the pairs cut into rows
   (:mod:`efficientrag.distill.pairs`), ``counts.json`` marking it done.
2. ``data-<fp>/``: the teachers' training set with the recorded rows mixed in (``mix``).
3. ``<kind>-<fp>/``: each student trained by the one training loop with ``teacher`` set (the
   loop's own checkpoints make a killed run resume mid-epoch); its ``best/`` is the student.

``distill.json`` in ``work_dir`` names the two models to retrieve with (a model not distilled is
its teacher) and what produced them.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from efficientrag.adapt.job import SET_FILES, stage_seconds
from efficientrag.adapt.mix import mix_training_sets
from efficientrag.adapt.self_training import Question, read_questions, record_decisions
from efficientrag.config import save_config
from efficientrag.config_values import to_dict
from efficientrag.distill.config import DistillConfig
from efficientrag.distill.pairs import write_pair_rows
from efficientrag.errors import ConfigError, MissingFileError
from efficientrag.experiment.run_binding import loop_fingerprint
from efficientrag.fingerprint import file_digest, folder_digest
from efficientrag.jsonl import write_jsonl
from efficientrag.training.config import TrainConfig
from efficientrag.training.fingerprint import fingerprint
from efficientrag.training.run import brief_metrics

log = logging.getLogger(__name__)

# Bump when a stage's output format or rules change: older folders are then not reused.
PAIRS_VERSION = 1


def run_distill(cfg: DistillConfig) -> dict[str, Any]:
    """Run (or resume) every stage; returns the summary also written to ``distill.json``."""
    cfg.check()
    work = Path(cfg.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    save_config(cfg, work / "config.yaml")
    teachers = _teachers(cfg)
    _check_depth(cfg, teachers)
    inputs = inputs_of(cfg, teachers)
    summary: dict[str, Any] = {"inputs": inputs, "stages": {}}
    data = Path(cfg.train_data)
    if cfg.questions:
        rows_dir, counts = pairs_stage(cfg, work, teachers)
        summary["stages"]["pairs"] = {"rows": str(rows_dir), "counts": counts}
        data, mixed = mix_stage(cfg, work, inputs, [rows_dir])
        summary["stages"]["mix"] = {"folder": str(data), "counts": mixed}
    models = dict(teachers)
    for kind in cfg.models:
        out, summary["stages"][kind] = train_student(cfg, kind, teachers, inputs, data, work)
        models[kind] = out / "best"
    summary["labeler"], summary["filter"] = str(models["labeler"]), str(models["filter"])
    (work / "distill.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def pairs_stage(
    cfg: DistillConfig,
    work: Path,
    teachers: dict[str, Path],
    *,
    questions: list[Question] | None = None,
    corpus: Any = None,
    retriever: Any = None,
) -> tuple[Path, dict[str, Any]]:
    """Record the teachers' loop over the questions (resumable), then cut the record into rows.

    Args:
        cfg: the settings (``questions`` and ``corpus`` files unless given here).
        work: the folder the stage folder goes in.
        teachers: the Labeler and Filter folders.
        questions: the questions, when they are not ``cfg.questions``'s (the benchmark's training side).
        corpus: the loaded corpus, when it is not ``cfg.corpus``.
        retriever: a search backend over ``corpus`` already built (else one is built in ``work``).
    """
    from efficientrag.data.corpus import Corpus

    if questions is None:
        questions, skipped = read_questions(cfg.questions)
        if skipped:
            write_jsonl(work / "skipped_questions.jsonl", skipped)
            log.warning("%d questions skipped (see %s)", len(skipped), work / "skipped_questions.jsonl")
    corpus = corpus if corpus is not None else Corpus.load(cfg.corpus)
    key = fingerprint(
        version=PAIRS_VERSION,
        teachers={k: folder_digest(v) for k, v in teachers.items()},
        questions=[(q.id, q.question) for q in questions],
        corpus=corpus.fingerprint(),
        retriever=to_dict(cfg.retriever, checks=False),
        loop=loop_fingerprint(cfg.efficientrag, answers=False, model_digests=True),
    )[:12]
    decisions = work / f"pairs-{key}" / "decisions.jsonl"
    rows_dir = decisions.parent / "rows"
    if (rows_dir / "counts.json").is_file():
        return rows_dir, json.loads((rows_dir / "counts.json").read_text(encoding="utf-8"))
    rag = teacher_loop(cfg, corpus, teachers, work, retriever)
    record_decisions(rag, questions, decisions, batch_size=cfg.record_batch_size, progress=cfg.progress)
    counts = write_pair_rows(decisions, rows_dir)
    (rows_dir / "counts.json").write_text(json.dumps(counts, indent=2), encoding="utf-8")
    return rows_dir, counts


def teacher_loop(
    cfg: DistillConfig, corpus: Any, teachers: dict[str, Path], work: Path, retriever: Any = None
) -> Any:
    """The EfficientRAG loop with the teachers, over ``corpus`` with ``cfg.retriever``."""
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.retrieval.factory import build_retriever

    if retriever is None:
        index = work / f"index-{corpus.fingerprint()[:12]}"
        retriever = build_retriever(cfg.retriever, corpus, index, show_progress=cfg.progress)
    rag_cfg = replace(cfg.efficientrag, labeler=str(teachers["labeler"]), filter=str(teachers["filter"]))
    return EfficientRAG.from_config(retriever, rag_cfg)


def mix_stage(
    cfg: DistillConfig, work: Path, inputs: dict[str, Any], rows_dirs: list[Path]
) -> tuple[Path, Any]:
    """The teachers' training set with the recorded rows of every ``rows_dirs`` mixed in (``cfg.mix``)."""
    rows = [file_digest([d / n for n in SET_FILES]) for d in rows_dirs]
    out = work / f"data-{fingerprint(inputs=inputs, rows=rows, mix=to_dict(cfg.mix))[:12]}"
    marker = out / "counts.json"
    if marker.is_file():
        return out, json.loads(marker.read_text(encoding="utf-8"))
    counts = mix_training_sets(cfg.train_data, rows_dirs, out, cfg.mix)
    marker.write_text(json.dumps(counts, indent=2), encoding="utf-8")
    return out, counts


def inputs_of(cfg: DistillConfig, teachers: dict[str, Path]) -> dict[str, Any]:
    """What every stage depends on: the teachers' and their training set's content."""
    original = Path(cfg.train_data)
    for name in SET_FILES:
        if not (original / name).is_file():
            raise MissingFileError(
                f"{original / name}: missing (train_data is the teachers' training set folder)"
            )
    return {
        "teachers": {k: folder_digest(v) for k, v in teachers.items()},
        "train_data": file_digest([original / n for n in SET_FILES]),
    }


def train_student(
    cfg: DistillConfig, kind: str, teachers: dict[str, Path], inputs: dict[str, Any], data: Path, work: Path
) -> tuple[Path, dict[str, Any]]:
    """Train (or resume, or reuse) ``kind``'s student on ``data``; returns its run folder and summary."""
    tcfg = student_config(cfg, kind, teachers[kind])
    data_digest = file_digest([data / n for n in SET_FILES])
    out = work / f"{kind}-{student_key(tcfg, inputs['teachers'][kind], data_digest)}"
    metrics = _train(tcfg, data / kind, out)
    return out, {
        "folder": str(out),
        "layers": _kept_layers(out / "best"),
        **brief_metrics(metrics),
        "stage_seconds": metrics.get("stage_seconds"),
    }


def student_config(cfg: DistillConfig, kind: str, teacher: Path) -> TrainConfig:
    """The training config of ``kind``'s student: the preset's, with the teacher and the layers."""
    base = cfg.labeler_train if kind == "labeler" else cfg.filter_train
    layers = list(cfg.layers)
    return replace(
        base,
        model=kind,
        init_from="",
        teacher=str(teacher),
        student_layers=layers,
        student_depth=0 if layers else cfg.depth,
    )


def student_key(tcfg: TrainConfig, teacher_digest: str, data_digest: str) -> str:
    """The student folder's fingerprint: its teacher's and data's content and every training
    setting (paths replaced by what they hold)."""
    settings = {k: v for k, v in to_dict(tcfg).items() if k not in ("teacher", "data_dir", "output_dir")}
    return fingerprint(teacher=teacher_digest, data=data_digest, train=settings)[:12]


def _train(tcfg: TrainConfig, data_dir: Path, out: Path) -> dict[str, Any]:
    """Train (or resume, or reuse) one student; its wall seconds over every run go to seconds.json."""
    from efficientrag.training.run import train_model

    done = (out / "final_metrics.json").is_file()
    t0 = time.perf_counter()
    metrics = train_model(tcfg, data_dir, out)
    metrics["stage_seconds"] = stage_seconds(out, 0.0 if done else time.perf_counter() - t0)
    return metrics


def _teachers(cfg: DistillConfig) -> dict[str, Path]:
    teachers = {"labeler": Path(cfg.labeler), "filter": Path(cfg.filter)}
    for kind, folder in teachers.items():
        if not (folder / "model.safetensors").is_file():
            raise MissingFileError(f"{folder}: no model.safetensors (pass the trained {kind}'s best/ folder)")
    return teachers


def _check_depth(cfg: DistillConfig, teachers: dict[str, Path]) -> None:
    """Before recording pairs or training anything: every student must be shallower than its
    teacher (a student of the teacher's own depth is a full-size copy, hours of training for no
    speed)."""
    from efficientrag.training.distill import check_student_size

    for kind in cfg.models:
        try:
            check_student_size(
                _kept_layers(teachers[kind]), cfg.layers, cfg.depth, teacher=str(teachers[kind])
            )
        except ValueError as exc:
            setting = f"layers={cfg.layers}" if cfg.layers else f"depth={cfg.depth} (--depth)"
            raise ConfigError(f"distill {setting}: {exc}") from None


def _kept_layers(folder: Path) -> int:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return int(config["encoder_config"]["num_hidden_layers"])
