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
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from efficientrag.adapt.choice import VALIDATION_GROUP, Judge, ScoringSet, best_index
from efficientrag.adapt.config import AdaptConfig
from efficientrag.adapt.exit_choice import choose_exit
from efficientrag.adapt.link_agreement import LinkView
from efficientrag.adapt.method_choice import choose_method
from efficientrag.adapt.mix import Ratio, mix_training_sets
from efficientrag.adapt.pair_choice import choose_pairs
from efficientrag.adapt.pseudo_rows import build_pseudo_sets, pseudo_scoring_sets, write_pseudo_sets
from efficientrag.adapt.self_training import Question, read_questions, record_decisions, rows_from_decisions
from efficientrag.adapt.validation import read_validation
from efficientrag.atomic import write_json_atomic
from efficientrag.config import save_config
from efficientrag.config_values import to_dict
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.data.split import TRAIN, VALIDATION
from efficientrag.errors import InvalidArgumentError, MissingFileError
from efficientrag.experiment.run_binding import loop_fingerprint
from efficientrag.fingerprint import file_digest
from efficientrag.jsonl import read_jsonl, write_jsonl
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.training.fingerprint import fingerprint
from efficientrag.training.run import brief_metrics

log = logging.getLogger(__name__)

# Bump when a stage's output format or rules change: older folders are then not reused.
ROWS_VERSION = 1
# The pseudo stage's own: its validation questions gained single-paragraph ones beside the chains'.
PSEUDO_VERSION = 2
MODEL_FILES = ("model.safetensors", "config.json")
SET_FILES = [f"{m}/{p}.jsonl" for m in ("labeler", "filter") for p in (TRAIN, VALIDATION)]


def run_adapt(cfg: AdaptConfig, *, extra_sets: Sequence[ScoringSet] = ()) -> dict[str, Any]:
    """Run every stage; returns (and writes to ``adapt.json``) what was made and what was kept.

    Args:
        cfg: the settings (``cfg.check()`` runs first).
        extra_sets: more questions to score candidates on, beside the pseudo-validation and
            ``cfg.validation`` questions (the adaptation benchmark passes the training files'
            validation questions, each over its own corpus).
    """
    cfg.check()
    work = Path(cfg.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    save_config(cfg, work / "config.yaml")
    timings: dict[str, float] = {}
    corpus, shipped, original, questions = _read_inputs(cfg, work)
    inputs = {
        "corpus": corpus.fingerprint(),
        "models": {k: _model_digest(v) for k, v in shipped.items()},
        "train_data": file_digest([original / n for n in SET_FILES]),
    }
    summary: dict[str, Any] = {"inputs": inputs, "stages": {}}
    # The pseudo rows also give the pseudo-validation questions: mined for scoring even when
    # option 1 is off (then a corpus without title links gives none, and is not refused).
    pseudo_dir, stats = pseudo_stage(cfg, corpus, work, inputs["corpus"], required=cfg.from_corpus)
    if pseudo_dir is not None:
        timings["pseudo_rows"] = stage_seconds(pseudo_dir, 0.0)
    judge = build_judge(cfg, corpus, pseudo_dir, extra_sets)
    summary["scoring_sets"] = judge.describe()
    sources: list[Path] = []
    current, ratios = shipped, cfg.mix.candidates()
    if cfg.from_corpus:
        assert pseudo_dir is not None
        sources.append(pseudo_dir)
        fp = _fp_dir(pseudo_dir)
        current, ratios, info = candidates_stage(
            cfg,
            judge,
            ratios,
            lambda r: work / f"corpus-{_short(inputs, fp, cfg, r)}",
            original,
            sources,
            shipped,
        )
        timings["finetune_corpus"] = info.pop("seconds")
        summary["stages"]["corpus"] = {"rows": stats["rows"], "pseudo": str(pseudo_dir), **info}
    if questions:
        qcorpus = Corpus.load(cfg.self_train.corpus) if cfg.self_train.corpus else corpus
        for r in range(1, cfg.self_train.rounds + 1):
            t0 = time.perf_counter()
            decisions = _decisions_stage(cfg, work, questions, qcorpus, current)
            rows_dir, counts = self_rows_stage(cfg, decisions, qcorpus)
            timings[f"self_decisions_{r}"] = stage_seconds(decisions.parent, time.perf_counter() - t0)
            fps = [_fp_dir(s) for s in sources] + [_fp_dir(rows_dir)]
            current, ratios, info = candidates_stage(
                cfg,
                judge,
                ratios,
                lambda ratio, r=r, fps=fps: work / f"self{r}-{_short(inputs, fps, cfg, ratio)}",
                original,
                [*sources, rows_dir],
                shipped,
            )
            timings[f"finetune_self_{r}"] = info.pop("seconds")
            summary["stages"][f"self{r}"] = {"decisions": str(decisions), "rows": counts, **info}
    summary["adapted"] = {k: str(v) for k, v in current.items()}
    result, summary["comparison"] = compare_stage(judge, shipped, current)
    summary["kept"] = summary["comparison"]["kept"]
    summary["labeler"], summary["filter"] = str(result["labeler"]), str(result["filter"])
    t0 = time.perf_counter()
    summary["method"] = method_stage(cfg, judge, result)
    timings["method_choice"] = time.perf_counter() - t0
    summary["timings_s"] = {k: round(v, 1) for k, v in timings.items()}
    write_json_atomic(work / "adapt.json", summary, indent=2)
    return summary


def _read_inputs(cfg: AdaptConfig, work: Path) -> tuple[Corpus, dict[str, Path], Path, list[Any]]:
    """Every input file read or checked before any stage starts: the corpus, the given models,
    their training set, the ``validation`` questions (read again by build_judge) and the
    unlabeled questions (skipped ones listed in ``skipped_questions.jsonl``)."""
    corpus = Corpus.load(cfg.corpus)
    shipped = {"labeler": Path(cfg.labeler), "filter": Path(cfg.filter)}
    original = Path(cfg.train_data)
    _check_inputs(shipped, original)
    if cfg.validation:
        read_validation(cfg.validation, corpus, cfg.corpus)
    questions, skipped = read_questions(cfg.questions) if cfg.questions else ([], [])
    if skipped:
        write_jsonl(work / "skipped_questions.jsonl", skipped)
        log.warning("%d questions skipped (see %s)", len(skipped), work / "skipped_questions.jsonl")
    return corpus, shipped, original, questions


def _check_inputs(shipped: dict[str, Path], original: Path) -> None:
    for kind, folder in shipped.items():
        if not (folder / "model.safetensors").is_file():
            raise MissingFileError(f"{folder}: no model.safetensors (pass the trained {kind}'s best/ folder)")
    for name in SET_FILES:
        if not (original / name).is_file():
            raise MissingFileError(
                f"{original / name}: missing (train_data is the models' training set folder)"
            )


def build_judge(
    cfg: AdaptConfig, corpus: Corpus, pseudo_dir: Path | None, extra_sets: Sequence[ScoringSet] = ()
) -> Judge:
    """What run_adapt scores models with: the pseudo-validation questions (``pseudo_dir``'s: chain
    questions and single-paragraph ones, two sets) and ``cfg.validation``'s, all over the adaptation
    corpus, then ``extra_sets``. Its evaluations go
    to ``work_dir/scores``, so a caller scoring other models with it shares them with run_adapt.

    Args:
        cfg: the settings (``validation``, ``retriever``, ``efficientrag``, ``work_dir``).
        corpus: the adaptation corpus.
        pseudo_dir: the pseudo stage's folder (None: no pseudo question).
        extra_sets: more scoring sets.
    """
    work = Path(cfg.work_dir)
    pseudo = _read_examples(pseudo_dir / "pseudo_validation.jsonl") if pseudo_dir is not None else []
    validation = read_validation(cfg.validation, corpus, cfg.corpus) if cfg.validation else []
    sets: list[ScoringSet] = []
    if pseudo or validation:
        retriever = _retriever(cfg, corpus, work)
        sets += pseudo_scoring_sets(pseudo, retriever)
        if validation:
            sets.append(ScoringSet("validation", VALIDATION_GROUP, retriever, validation))
    return Judge([*sets, *extra_sets], cfg.efficientrag, work / "scores", progress=cfg.progress)


def _decisions_stage(
    cfg: AdaptConfig, work: Path, questions: list[Question], qcorpus: Corpus, models: dict[str, Path]
) -> Path:
    """The loop's decisions on the questions with ``models``, in a folder keyed by all they depend on."""
    key = fingerprint(
        version=ROWS_VERSION,
        models={k: _model_digest(v) for k, v in models.items()},
        questions=fingerprint(questions=[(q.id, q.question) for q in questions]),
        corpus=qcorpus.fingerprint(),
        retriever=to_dict(cfg.retriever, checks=False),
        loop=loop_fingerprint(cfg.efficientrag, answers=False, model_digests=True),
    )[:12]
    decisions = work / f"decisions-{key}" / "decisions.jsonl"
    rag = _load_rag(cfg, qcorpus, models, work)
    record_decisions(rag, questions, decisions, progress=cfg.progress)
    return decisions


def stage_seconds(folder: Path, spent: float) -> float:
    """Wall seconds spent on a stage's folder over every run that worked on it (kept in its
    ``seconds.json``): a rerun that reuses a finished stage reports what making it cost, not the
    instant of finding it done. A run killed mid-stage records nothing; the run that finishes the
    stage records its own share."""
    path = folder / "seconds.json"
    before = json.loads(path.read_text(encoding="utf-8"))["seconds"] if path.is_file() else 0.0
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"seconds": before + spent})
    return before + spent


def pseudo_stage(
    cfg: AdaptConfig, corpus: Corpus, work: Path, corpus_fp: str, *, required: bool = True
) -> tuple[Path | None, dict[str, Any]]:
    """Pseudo rows and pseudo-validation questions from the corpus's title links.

    Args:
        cfg: the settings (``pseudo``, ``retriever``).
        corpus: the adaptation corpus.
        work: the work folder.
        corpus_fp: the corpus's fingerprint.
        required: refuse a corpus that gives no pseudo question (option 1 needs them); otherwise
            return ``(None, stats)`` for it (they were wanted for scoring only).
    """
    key = fingerprint(
        version=PSEUDO_VERSION,
        corpus=corpus_fp,
        pseudo=asdict(cfg.pseudo),
        retriever=to_dict(cfg.retriever, checks=False),
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
    if not sets.labeler[TRAIN] and not required:
        log.warning(
            "%s: no pseudo question (%d title links): no pseudo-validation question to score with",
            cfg.corpus,
            sets.stats["links"],
        )
        return None, sets.stats
    if not sets.labeler[TRAIN]:
        raise InvalidArgumentError(
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
    # What the rows depend on (min_continue_rows only decides whether they are used).
    cut = {k: v for k, v in asdict(st).items() if k not in ("rounds", "corpus", "min_continue_rows")}
    if not links:
        cut.pop("agreement")  # the cut made before agreement existed: its folders stay valid
    extra = {"links": asdict(cfg.pseudo.link)} if links else {}
    key = fingerprint(decisions=file_digest([decisions]), cut=cut, **extra)[:12]
    out = decisions.parent / f"rows-{key}"
    if (out / "counts.json").is_file():
        counts = json.loads((out / "counts.json").read_text(encoding="utf-8"))
        _enough_continue_rows(cfg, decisions, counts)
        return out, counts
    view = LinkView.of_corpus(qcorpus, cfg.pseudo.link, progress=cfg.progress) if links else None
    labeler, filt, counts = rows_from_decisions(decisions, st, view)
    _enough_continue_rows(cfg, decisions, counts)
    if not labeler[TRAIN]:
        raise InvalidArgumentError(
            f"self-training kept no row from {decisions} at continue_threshold={st.continue_threshold}, "
            f"terminate_threshold={st.terminate_threshold}: lower the thresholds"
        )
    for split in (TRAIN, VALIDATION):
        write_jsonl(out / "labeler" / f"{split}.jsonl", labeler[split])
        write_jsonl(out / "filter" / f"{split}.jsonl", filt[split])
    write_json_atomic(out / "counts.json", counts, indent=2)
    return out, counts


def _enough_continue_rows(cfg: AdaptConfig, decisions: Path, counts: dict[str, Any]) -> None:
    """Refuse, before any fine-tune on them, self-training rows with (almost) no Continue row."""
    st = cfg.self_train
    n = int(counts.get("continue_rows", 0))
    if n >= st.min_continue_rows:
        return
    if st.agreement == "links":
        why = (
            "a confident Continue pair becomes a row only where the corpus's title links back it, and "
            "few did (in a corpus whose chunks never name each other's titles, none can)"
        )
    else:
        why = f"few pairs reached self_train.continue_threshold={st.continue_threshold}"
    raise InvalidArgumentError(
        f"self-training found {n} Continue rows in {decisions}, fewer than the "
        f"self_train.min_continue_rows={st.min_continue_rows} it needs: {why}. Fine-tuning on "
        "(almost) only Terminate rows would teach the models to stop early, so nothing was fine-tuned. "
        "To go on: set self_train.agreement=none, lower self_train.continue_threshold or "
        "self_train.min_continue_rows, or adapt from the corpus alone (drop --questions)"
    )


def candidates_stage(
    cfg: AdaptConfig,
    judge: Judge,
    ratios: list[Ratio],
    folder_of: Callable[[Ratio], Path],
    original: Path,
    sources: list[Path],
    start: dict[str, Path],
) -> tuple[dict[str, Path], list[Ratio], dict[str, Any]]:
    """Fine-tune one model pair per candidate ratio (each in its own folder), score them, keep the
    best. Returns its models, ``[its ratio]`` (what later stages use) and the stage's record."""
    if len(ratios) > 1 and not judge:
        raise InvalidArgumentError(
            f"mix.ratios lists {len(ratios)} candidates ({', '.join(r.name for r in ratios)}) but there "
            "is no question to choose with (the corpus gave no pseudo-validation question): pass "
            "--validation questions with gold ids, or one ratio (mix.ratios=[2.0])"
        )
    made = []
    for ratio in ratios:
        out = folder_of(ratio)
        t0 = time.perf_counter()
        models, info = finetune_stage(cfg, out, original, sources, start, ratio)
        entry = {"ratio": ratio.name, **ratio.to_dict(), **info}
        entry["finetune_s"] = round(stage_seconds(out, time.perf_counter() - t0), 1)
        if len(ratios) > 1:
            scored = judge.score(models)
            entry |= {"score": round(scored.score, 2), "sets": scored.sets}
        made.append((models, entry))
    pick = best_index([e.get("score", 0.0) for _, e in made])
    models, chosen = made[pick]
    record = {k: chosen[k] for k in ("folder", "mix", "metrics", "ratio")}
    record["seconds"] = sum(e["finetune_s"] for _, e in made)
    if len(ratios) > 1:
        record["candidates"] = [e for _, e in made]
        log.info("mix ratio %s chosen among %s", chosen["ratio"], [e["ratio"] for _, e in made])
    return models, [ratios[pick]], record


def compare_stage(
    judge: Judge, given: dict[str, Path], adapted: dict[str, Path]
) -> tuple[dict[str, Path], dict[str, Any]]:
    """The adapted models against the given ones on the scoring sets: the given ones are the
    result when the adapted ones score lower (said loudly), so adapt never hands back models it
    has measured to be worse."""
    if not judge:
        log.warning(
            "THE ADAPTED MODELS ARE NOT CHECKED: no pseudo-validation question (the corpus has no title "
            "links to mine them from) and no --validation questions; pass --validation to compare them "
            "with the given models"
        )
        return adapted, {"compared": False, "kept": "adapted"}
    before, after = judge.score(given), judge.score(adapted)
    kept = "given" if after.score < before.score else "adapted"
    if kept == "given":
        log.warning(
            "THE ADAPTED MODELS SCORE LOWER THAN THE GIVEN ONES (%.2f < %.2f on %s): the given models "
            "are the result",
            after.score,
            before.score,
            ", ".join(judge.describe()),
        )
    record = {"compared": True, "kept": kept, "given": before.to_dict(), "adapted": after.to_dict()}
    return (given if kept == "given" else adapted), record


def method_stage(cfg: AdaptConfig, judge: Judge, models: dict[str, Path]) -> dict[str, Any]:
    """The retrieval method for the kept models (``method_choice``), written with them and the search
    to ``work_dir/retrieve.yaml``, a preset ``efficientrag retrieve``, ``eval`` and ``serve`` read
    with ``-c``. Without scoring sets, or with the choice off, the configured loop."""
    loop = replace(cfg.efficientrag, labeler=str(models["labeler"]), filter=str(models["filter"]))
    if cfg.method_choice.enabled and judge:
        loop, record = choose_method(judge, models, loop, cfg.method_choice)
    else:
        why = "method_choice.enabled=false" if judge else "no scoring set"
        record = {"chosen": "loop", "compared": False, "why": why}
    if cfg.pairs.enabled:
        loop, record["pairs"] = (
            choose_pairs(judge, models, loop, cfg.pairs) if judge else (loop, {"why": "no scoring set"})
        )
    if cfg.early_exit.enabled:
        loop, record["early_exit"] = exit_stage(cfg, judge, models, loop)
    preset = Path(cfg.work_dir) / "retrieve.yaml"
    save_config({"retriever": cfg.retriever, "efficientrag": loop}, preset)
    record["preset"] = str(preset)
    record["efficientrag"] = to_dict(loop)
    return record


def exit_stage(
    cfg: AdaptConfig, judge: Judge, models: dict[str, Path], loop: EfficientRAGConfig
) -> tuple[EfficientRAGConfig, dict[str, Any]]:
    """The chosen method's ``exit_threshold`` (``exit_choice``), with exit heads fit for the adapted
    Labeler on the rows it was fine-tuned on. The given Labeler's folder is the user's and is not
    written to: kept, it runs at full depth."""
    labeler = Path(models["labeler"])
    rows = labeler.parent.parent / "train_data" / "labeler" / "train.jsonl"
    if not judge:
        return loop, {"chosen": None, "why": "no scoring set"}
    if not labeler.resolve().is_relative_to(Path(cfg.work_dir).resolve()) or not rows.is_file():
        why = "the given Labeler was kept; fit its heads with `efficientrag train exit-head` to use an exit"
        return loop, {"chosen": None, "why": why}
    return choose_exit(judge, models, loop, rows, cfg.early_exit, Path(cfg.work_dir) / "early_exit")


def finetune_stage(
    cfg: AdaptConfig,
    out: Path,
    original: Path,
    sources: list[Path],
    start: dict[str, Path],
    ratio: Ratio | None = None,
) -> tuple[dict[str, Path], dict[str, Any]]:
    """Mix at ``ratio`` (None: the config's only one), then fine-tune both models from
    ``start``; returns their best/ folders."""
    from efficientrag.training.run import train_model

    data = out / "train_data"
    marker = data / "counts.json"
    if marker.is_file():
        counts = json.loads(marker.read_text(encoding="utf-8"))
    else:
        counts = mix_training_sets(original, sources, data, cfg.mix, ratio)
        write_json_atomic(marker, counts, indent=2)
    metrics = {}
    for kind, base in (("labeler", cfg.labeler_train), ("filter", cfg.filter_train)):
        tcfg = replace(base, model=kind, init_from=str(start[kind]))
        metrics[kind] = train_model(tcfg, data / kind, out / kind)
    models = {kind: out / kind / "best" for kind in ("labeler", "filter")}
    return models, {
        "folder": str(out),
        "mix": counts,
        "metrics": {k: brief_metrics(m) for k, m in metrics.items()},
    }


def _retriever(cfg: AdaptConfig, corpus: Corpus, work: Path) -> Any:
    from efficientrag.retrieval.factory import build_retriever

    return build_retriever(
        cfg.retriever, corpus, work / f"index-{corpus.fingerprint()[:12]}", show_progress=cfg.progress
    )


def _read_examples(path: Path) -> list[Example]:
    return [Example.from_dict(rec) for rec in read_jsonl(path)]


def _load_rag(cfg: AdaptConfig, corpus: Corpus, models: dict[str, Path], work: Path) -> Any:
    from efficientrag.pipeline.efficientrag import EfficientRAG

    retriever = _retriever(cfg, corpus, work)
    rag_cfg = replace(cfg.efficientrag, labeler=str(models["labeler"]), filter=str(models["filter"]))
    return EfficientRAG.from_config(retriever, rag_cfg)


def _short(inputs: dict[str, Any], sources: Any, cfg: AdaptConfig, ratio: Ratio) -> str:
    return fingerprint(
        inputs=inputs,
        sources=sources,
        mix=cfg.mix.stage_key(ratio),
        labeler=to_dict(cfg.labeler_train),
        filter=to_dict(cfg.filter_train),
    )[:12]


def _fp_dir(folder: Path) -> str:
    return folder.name


def _model_digest(folder: Path) -> str:
    return file_digest([folder / name for name in MODEL_FILES if (folder / name).is_file()])
