"""``efficientrag adapt``: fine-tune trained models for a new corpus, resumable stage by stage.

Stages (each in a folder named by the fingerprint of everything it depends on, so a rerun with
the same inputs continues or skips it, and one with other inputs never reuses it):

1. ``pseudo-<fp>``: pseudo rows mined from the corpus (option 1); ``stats.json`` marks it done.
2. ``corpus-<fp>``: the original training set mixed with them, and the two models fine-tuned from
   the given ones (the training loop's own checkpoints make a killed run resume mid-epoch).
3. ``self<round>-<fp>``: with ``questions``, per round: the loop's decisions on the questions
   with the latest models (appended batch by batch), the confident ones cut into rows,
   and the given models fine-tuned on the original set + the corpus rows (if any) + these rows.

``adapt.json`` in ``work_dir`` names the final models and what produced them.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from efficientrag.adapt.config import AdaptConfig
from efficientrag.adapt.link_agreement import LinkView
from efficientrag.adapt.mix import mix_training_sets
from efficientrag.adapt.pseudo_rows import build_pseudo_sets, write_pseudo_sets
from efficientrag.adapt.self_training import read_questions, record_decisions, rows_from_decisions
from efficientrag.config import save_config, to_dict
from efficientrag.data.corpus import Corpus
from efficientrag.jsonl import write_jsonl
from efficientrag.synth.split import TRAIN, VALIDATION
from efficientrag.training.fingerprint import file_digest, fingerprint

log = logging.getLogger(__name__)

# Bump when a stage's output format or rules change: older folders are then not reused.
ROWS_VERSION = 1
MODEL_FILES = ("model.safetensors", "config.json")
SET_FILES = [f"{m}/{p}.jsonl" for m in ("labeler", "filter") for p in (TRAIN, VALIDATION)]


def run_adapt(cfg: AdaptConfig) -> dict[str, Any]:
    cfg.check()
    work = Path(cfg.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    save_config(cfg, work / "config.yaml")
    timings: dict[str, float] = {}
    corpus = Corpus.load(cfg.corpus)
    shipped = {"labeler": Path(cfg.labeler), "filter": Path(cfg.filter)}
    for kind, folder in shipped.items():
        if not (folder / "model.safetensors").is_file():
            raise FileNotFoundError(
                f"{folder}: no model.safetensors (pass the trained {kind}'s best/ folder)"
            )
    original = Path(cfg.train_data)
    for name in SET_FILES:
        if not (original / name).is_file():
            raise FileNotFoundError(
                f"{original / name}: missing (train_data is the models' training set folder)"
            )
    questions, skipped = read_questions(cfg.questions) if cfg.questions else ([], [])
    if skipped:
        write_jsonl(work / "skipped_questions.jsonl", skipped)
        log.warning("%d questions skipped (see %s)", len(skipped), work / "skipped_questions.jsonl")

    inputs = {
        "corpus": corpus.fingerprint(),
        "models": {k: _model_digest(v) for k, v in shipped.items()},
        "train_data": file_digest([original / n for n in SET_FILES]),
    }
    summary: dict[str, Any] = {"inputs": inputs, "stages": {}}
    sources: list[Path] = []
    current = shipped
    if cfg.from_corpus:
        pseudo_dir, stats = pseudo_stage(cfg, corpus, work, inputs["corpus"])
        timings["pseudo_rows"] = stage_seconds(pseudo_dir, 0.0)
        sources.append(pseudo_dir)
        t0 = time.perf_counter()
        out = work / f"corpus-{_short(inputs, _fp_dir(pseudo_dir), cfg)}"
        current, info = finetune_stage(cfg, out, original, sources, shipped)
        timings["finetune_corpus"] = stage_seconds(out, time.perf_counter() - t0)
        summary["stages"]["corpus"] = {"rows": stats["rows"], "pseudo": str(pseudo_dir), **info}
    if questions:
        qcorpus = Corpus.load(cfg.self_train.corpus) if cfg.self_train.corpus else corpus
        qdigest = fingerprint(questions=[(q.id, q.question) for q in questions])
        for r in range(1, cfg.self_train.rounds + 1):
            t0 = time.perf_counter()
            key = fingerprint(
                version=ROWS_VERSION,
                models={k: _model_digest(v) for k, v in current.items()},
                questions=qdigest,
                corpus=qcorpus.fingerprint(),
                retriever=to_dict(cfg.retriever),
                loop=to_dict(replace(cfg.efficientrag, labeler=None, filter=None)),
            )[:12]
            decisions = work / f"decisions-{key}" / "decisions.jsonl"
            rag = _load_rag(cfg, qcorpus, current, work)
            record_decisions(rag, questions, decisions, progress=cfg.progress)
            rows_dir, counts = self_rows_stage(cfg, decisions, qcorpus)
            timings[f"self_decisions_{r}"] = stage_seconds(decisions.parent, time.perf_counter() - t0)
            t0 = time.perf_counter()
            out = work / f"self{r}-{_short(inputs, [_fp_dir(s) for s in sources] + [_fp_dir(rows_dir)], cfg)}"
            current, info = finetune_stage(cfg, out, original, [*sources, rows_dir], shipped)
            timings[f"finetune_self_{r}"] = stage_seconds(out, time.perf_counter() - t0)
            summary["stages"][f"self{r}"] = {"decisions": str(decisions), "rows": counts, **info}
    summary["labeler"], summary["filter"] = str(current["labeler"]), str(current["filter"])
    summary["timings_s"] = {k: round(v, 1) for k, v in timings.items()}
    (work / "adapt.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def stage_seconds(folder: Path, spent: float) -> float:
    """Wall seconds spent on a stage's folder over every run that worked on it (kept in its
    ``seconds.json``): a rerun that reuses a finished stage reports what making it cost, not the
    instant of finding it done. A run killed mid-stage records nothing; the run that finishes the
    stage records its own share."""
    path = folder / "seconds.json"
    before = json.loads(path.read_text(encoding="utf-8"))["seconds"] if path.is_file() else 0.0
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seconds": before + spent}), encoding="utf-8")
    return before + spent


def pseudo_stage(cfg: AdaptConfig, corpus: Corpus, work: Path, corpus_fp: str) -> tuple[Path, dict[str, Any]]:
    key = fingerprint(
        version=ROWS_VERSION, corpus=corpus_fp, pseudo=asdict(cfg.pseudo), retriever=to_dict(cfg.retriever)
    )
    out = work / f"pseudo-{key[:12]}"
    if (out / "stats.json").is_file():
        log.info("pseudo rows: reusing %s", out)
        return out, json.loads((out / "stats.json").read_text(encoding="utf-8"))
    from efficientrag.retrieval.factory import build_retriever

    # Timed here, not by the caller: the stage is also made outside run_adapt (the adaptation
    # benchmark builds it first for its pseudo-validation questions), and run_adapt then finds it done.
    t0 = time.perf_counter()

    retriever = build_retriever(
        cfg.retriever, corpus, work / f"index-{corpus_fp[:12]}", show_progress=cfg.progress
    )
    sets = build_pseudo_sets(corpus, retriever, cfg.pseudo, progress=cfg.progress)
    if not sets.labeler[TRAIN]:
        raise ValueError(
            f"{cfg.corpus}: no pseudo question could be made ({sets.stats['links']} title links; "
            f"rejects: {sets.stats['rejects']}); the corpus needs paragraphs that name other paragraphs' titles"
        )
    stats = write_pseudo_sets(sets, out)
    stage_seconds(out, time.perf_counter() - t0)
    log.info("pseudo rows in %s: %s", out, stats["rows"])
    return out, stats


def self_rows_stage(cfg: AdaptConfig, decisions: Path, qcorpus: Corpus) -> tuple[Path, dict[str, Any]]:
    st = cfg.self_train
    links = st.agreement == "links"
    cut = {k: v for k, v in asdict(st).items() if k not in ("rounds", "corpus")}
    if not links:
        cut.pop("agreement")  # the cut made before agreement existed: its folders stay valid
    extra = {"links": asdict(cfg.pseudo.link)} if links else {}
    key = fingerprint(decisions=file_digest([decisions]), cut=cut, **extra)[:12]
    out = decisions.parent / f"rows-{key}"
    if (out / "counts.json").is_file():
        return out, json.loads((out / "counts.json").read_text(encoding="utf-8"))
    view = LinkView.of_corpus(qcorpus, cfg.pseudo.link, progress=cfg.progress) if links else None
    labeler, filt, counts = rows_from_decisions(decisions, st, view)
    if not labeler[TRAIN]:
        raise ValueError(
            f"self-training kept no row from {decisions} at continue_threshold={st.continue_threshold}, "
            f"terminate_threshold={st.terminate_threshold}: lower the thresholds"
        )
    for split in (TRAIN, VALIDATION):
        write_jsonl(out / "labeler" / f"{split}.jsonl", labeler[split])
        write_jsonl(out / "filter" / f"{split}.jsonl", filt[split])
    (out / "counts.json").write_text(json.dumps(counts, indent=2), encoding="utf-8")
    return out, counts


def finetune_stage(
    cfg: AdaptConfig, out: Path, original: Path, sources: list[Path], start: dict[str, Path]
) -> tuple[dict[str, Path], dict[str, Any]]:
    """Mix, then fine-tune both models from ``start``; returns their best/ folders."""
    from efficientrag.training.run import train_model

    data = out / "train_data"
    marker = data / "counts.json"
    if marker.is_file():
        counts = json.loads(marker.read_text(encoding="utf-8"))
    else:
        counts = mix_training_sets(original, sources, data, cfg.mix)
        marker.write_text(json.dumps(counts, indent=2), encoding="utf-8")
    metrics = {}
    for kind, base in (("labeler", cfg.labeler_train), ("filter", cfg.filter_train)):
        tcfg = replace(base, model=kind, init_from=str(start[kind]))
        metrics[kind] = train_model(tcfg, data / kind, out / kind)
    models = {kind: out / kind / "best" for kind in ("labeler", "filter")}
    return models, {"folder": str(out), "mix": counts, "metrics": {k: _brief(m) for k, m in metrics.items()}}


def _load_rag(cfg: AdaptConfig, corpus: Corpus, models: dict[str, Path], work: Path) -> Any:
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.retrieval.factory import build_retriever

    retriever = build_retriever(
        cfg.retriever, corpus, work / f"index-{corpus.fingerprint()[:12]}", show_progress=cfg.progress
    )
    rag_cfg = replace(cfg.efficientrag, labeler=str(models["labeler"]), filter=str(models["filter"]))
    return EfficientRAG.from_config(retriever, rag_cfg)


def _short(inputs: dict[str, Any], sources: Any, cfg: AdaptConfig) -> str:
    return fingerprint(
        inputs=inputs,
        sources=sources,
        mix=asdict(cfg.mix),
        labeler=to_dict(cfg.labeler_train),
        filter=to_dict(cfg.filter_train),
    )[:12]


def _fp_dir(folder: Path) -> str:
    return folder.name


def _model_digest(folder: Path) -> str:
    return file_digest([folder / name for name in MODEL_FILES if (folder / name).is_file()])


def _brief(metrics: dict[str, Any]) -> dict[str, Any]:
    best = metrics.get("best") or {}
    keep = ("token_f1", "tag_accuracy", "tag_f1", "score")
    return {
        "best_step": metrics.get("best_step"),
        "train_rows": metrics.get("train_rows"),
        "train_runtime_s": metrics.get("train_runtime_s"),
        **{k: best[k] for k in keep if k in best},
    }
