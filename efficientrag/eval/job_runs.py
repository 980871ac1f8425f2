"""Evaluation runs inside a job's own work folder: the quickstart's held-out comparison, the
adaptation job's scoring of candidate models, the benchmarks built on them.

These callers hold a retriever and the questions already (no experiment config to build them
from) and own their run folders: a folder made under other inputs (another setting, newly trained
models) is evaluated again rather than refused, as :func:`efficientrag.eval.evaluation.evaluate`
refuses it for a user's run. The fingerprint binds what the predictions depend on: the method,
what the index holds and which questions are asked, the loop's settings and the models' weights.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from efficientrag.config_values import to_dict
from efficientrag.errors import InvalidArgumentError
from efficientrag.eval.evaluation import RunSummary
from efficientrag.eval.runner import run_method
from efficientrag.experiment.run_binding import index_and_data, loop_fingerprint, resumable
from efficientrag.setting_fields import ANSWER_ONLY, settings_with

if TYPE_CHECKING:
    from efficientrag.baselines.base import Method
    from efficientrag.data.schema import Example
    from efficientrag.pipeline.config import EfficientRAGConfig
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.retrieval.base import Retriever

log = logging.getLogger(__name__)


def evaluate_efficientrag_run(
    rag_cfg: EfficientRAGConfig,
    retriever: Retriever,
    examples: Sequence[Example],
    out_dir: str | Path,
    *,
    rag: EfficientRAG | None = None,
    batch_size: int = 32,
    progress: bool = True,
    meta: Mapping[str, Any] | None = None,
) -> RunSummary:
    """EfficientRAG's retrieval (no answer) on ``examples``, in ``out_dir``.

    Args:
        rag_cfg: the loop's settings, and the Labeler and Filter folders when ``rag`` is None.
        retriever: the backend the loop searches.
        examples: the questions, with gold chunk ids.
        out_dir: the run folder; one made under other inputs is evaluated again.
        rag: an already loaded :class:`~efficientrag.pipeline.efficientrag.EfficientRAG`, which
            saves reloading the models per setting; its models run (and bind the results),
            whatever ``rag_cfg``'s paths say, under ``rag_cfg``'s settings.
        batch_size: questions per batch.
        progress: show a progress bar.
        meta: extra summary keys (the dataset, the split).

    Returns:
        The run's summary; ``summary["retrieval"]["all"]`` holds recall, all-gold and chunks.
    """
    from efficientrag.baselines.efficientrag import EfficientRAGRetrieval
    from efficientrag.fingerprint import folder_digest
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.pipeline.inputs import loaded_path

    if rag is None:
        rag = EfficientRAG.from_config(retriever, rag_cfg)
        folders = (rag_cfg.labeler, rag_cfg.filter)
    else:
        folders = (_loaded_from(rag.labeler), _loaded_from(rag.filter))
        rag = EfficientRAG(rag.retriever, rag.labeler, rag.filter, rag_cfg)
    # What runs, not "auto": the loaded models' path when they say it, else the config's.
    settings = loop_fingerprint(rag_cfg, answers=False, quantize=loaded_path(rag.labeler))
    fingerprint = {
        "method": "efficientrag",
        **index_and_data(retriever, examples),
        "settings": {"efficientrag": settings},
        "models": {
            "labeler": folder_digest(str(folders[0])),
            "filter": folder_digest(str(folders[1])),
        },
    }
    if rag_cfg.first_hop_reranker is not None:
        fingerprint["models"]["reranker"] = folder_digest(rag_cfg.first_hop_reranker)
    if rag_cfg.exit_threshold is not None:
        from efficientrag.models.early_exit import early_exit_digest

        fingerprint["models"]["early_exit"] = early_exit_digest(folders[0])
    method = EfficientRAGRetrieval(None, None, rag=rag)
    meta = {**(meta or {}), "efficientrag": to_dict(rag_cfg)}
    return _run(method, examples, Path(out_dir), fingerprint, (), batch_size, progress, meta)


def evaluate_ranked_run(
    method: Method,
    examples: Sequence[Example],
    out_dir: str | Path,
    *,
    ks: Sequence[int],
    batch_size: int = 32,
    progress: bool = True,
    meta: Mapping[str, Any] | None = None,
) -> RunSummary:
    """A method that ranks chunks and answers nothing (Direct-R, ``rerank``, ``labeler_rerank``),
    already built with its models, on ``examples``, its ranked list scored at ``ks``, in ``out_dir``.

    Args:
        method: The built method; its retriever is the one searched.
        examples: the questions, with gold chunk ids.
        out_dir: the run folder; one made under other inputs (settings, model weights, ``ks``) is
            evaluated again.
        ks: the cut-offs the ranked list is scored at (K chunks kept).
        batch_size: questions per batch.
        progress: show a progress bar.
        meta: extra summary keys (the dataset, the split).

    Returns:
        The run's summary; ``summary["retrieval"][str(k)]`` holds the scores at each cut-off.
    """
    from efficientrag.experiment.assembly import model_digest
    from efficientrag.experiment.run_binding import SPEED_ONLY_SETTINGS

    # Nothing here answers, so the answer call's settings cannot change the run.
    skipped = {*method.model_fields, *SPEED_ONLY_SETTINGS, *settings_with(type(method.cfg), ANSWER_ONLY)}
    settings = {k: v for k, v in to_dict(method.cfg).items() if k not in skipped}
    models = {kind: model_digest(kind, getattr(method.cfg, f)) for f, kind in method.model_fields.items()}
    if getattr(method, "heads_digest", None):  # pairs leave early by the exit heads: they decide too
        models["early_exit"] = method.heads_digest
    # A method with no setting and no model left (Direct-R) is bound by what it searches alone.
    fingerprint = {
        "method": method.name,
        **index_and_data(method.retriever, examples),
        **({"settings": {method.name: settings}} if settings else {}),
        **({"models": models} if models else {}),
        "eval": {"ks": list(ks)},
    }
    return _run(method, examples, Path(out_dir), fingerprint, ks, batch_size, progress, dict(meta or {}))


def _loaded_from(model: Any) -> Path:
    """The folder a loaded Labeler/Filter came from (through a prediction cache, if any)."""
    source = getattr(getattr(model, "model", model), "source", None)
    if source is None:
        raise InvalidArgumentError(
            f"{type(model).__name__}: a model not loaded from a folder cannot bind its results to its "
            "weights; load it with from_pretrained or pass its folder in the EfficientRAG config"
        )
    return Path(source)


def _run(
    method: Any,
    examples: Sequence[Example],
    out_dir: Path,
    fingerprint: dict[str, Any],
    ks: Sequence[int],
    batch_size: int,
    progress: bool,
    meta: dict[str, Any],
) -> RunSummary:
    """The run, resumed when the folder was made under the same fingerprint, else started over."""
    resume = resumable(out_dir, fingerprint)
    if not resume:
        log.info("%s was evaluated under other inputs: evaluating again", out_dir)
    summary = run_method(
        method,
        examples,
        out_dir,
        ks=ks,
        batch_size=batch_size,
        resume=resume,
        fingerprint=fingerprint,
        progress=progress,
        meta=meta,
    )
    return RunSummary(run_dir=out_dir, metrics=summary)
