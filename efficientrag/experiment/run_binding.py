"""A run folder is bound to the inputs that determined its predictions.

Resuming by question id alone would report old predictions after a change of corpus, models or
settings. So every run folder records a fingerprint (``run.json``): a flat mapping from dotted keys
(``settings.efficientrag.top_k``, ``models.labeler``, ``index``, ``data`` ...) to values or content
hashes. A rerun whose fingerprint differs is refused, naming the keys that differ; the user picks a
new folder (``eval.name=...``) or starts over (``--no-resume``). A new folder is not made silently:
two folders for one method would leave a reader guessing which numbers are current.

The fingerprint of an evaluation run is assembled here too (:func:`run_fingerprint`): the method's
own section and, for an answering run, the prompts, judge and generator; the retriever settings;
the models' content hashes; what the index holds and which questions it answers. Settings that only
change speed (batch sizes, concurrency, retries, caches) are left out, so changing them keeps a
run resumable. The hashes themselves are :mod:`efficientrag.fingerprint`'s and
:func:`efficientrag.retrieval.fingerprint.retriever_fingerprint`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from efficientrag.atomic import write_json_atomic
from efficientrag.baselines.registry import METHODS, registered_name
from efficientrag.config import flatten
from efficientrag.config_values import fingerprinted, to_dict
from efficientrag.data.schema import Example
from efficientrag.errors import EfficientRAGError
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.fingerprint import folder_digest, json_digest
from efficientrag.pipeline.config import ANSWER_SETTINGS, EfficientRAGConfig
from efficientrag.retrieval.fingerprint import retriever_fingerprint
from efficientrag.run_lock import folder_lock
from efficientrag.setting_fields import SPEED_ONLY, settings_in_tree

if TYPE_CHECKING:
    from efficientrag.data.pooling import PooledDataset

FINGERPRINT_FILE = "run.json"
PREDICTIONS_FILE = "predictions.jsonl"
# The last words of a refusal to use a folder another process is writing.
LOCK_HINT = "wait for it to finish, or pass --wait (eval.wait_for_lock=true) to run after it"
# Differing keys named in the refusal; the rest are counted.
KEYS_SHOWN = 6


class StaleRunError(EfficientRAGError, ValueError):
    """A run folder holds predictions made under other inputs than the ones asked for now."""


def fingerprint_id(fingerprint: Mapping[str, Any]) -> str:
    """One short id for a whole fingerprint: what reports show beside each row."""
    return json_digest(flatten(fingerprint))


def read_fingerprint(run_dir: str | Path) -> dict[str, Any] | None:
    path = Path(run_dir) / FINGERPRINT_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return None
    fingerprint = data.get("fingerprint") if isinstance(data, dict) else None
    return fingerprint if isinstance(fingerprint, dict) else None


def differing_keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    a, b = flatten(old), flatten(new)
    return sorted(k for k in a.keys() | b.keys() if a.get(k, _MISSING) != b.get(k, _MISSING))


def resumable(run_dir: str | Path, fingerprint: Mapping[str, Any]) -> bool:
    """Whether :func:`bind_run` with ``resume=True`` would accept ``run_dir`` (for callers that own
    their folders and start over instead of refusing)."""
    predictions = Path(run_dir) / PREDICTIONS_FILE
    if not predictions.is_file() or predictions.stat().st_size == 0:
        return True
    old = read_fingerprint(run_dir)
    return old is not None and not differing_keys(old, fingerprint)


def bind_run(
    run_dir: str | Path, fingerprint: Mapping[str, Any], *, resume: bool = True, wait_for_lock: bool = False
) -> bool:
    """Record ``fingerprint`` for ``run_dir``; returns True when earlier predictions are resumed.

    Raises :class:`StaleRunError` when ``resume`` is set and the folder holds predictions made under
    another fingerprint (or under none: a folder written before fingerprints existed).
    ``resume=False`` deletes the folder's earlier predictions first. The folder's lock is held
    while it is checked and written (another process's run is never deleted or rebound under it):
    :class:`~efficientrag.run_lock.FolderLockedError` while another process holds it, unless
    ``wait_for_lock``. :func:`efficientrag.eval.runner.run_method` is its one caller: it holds the
    lock around the binding and the predictions it goes on to write.
    """
    run_dir = Path(run_dir)
    with folder_lock(run_dir, wait=wait_for_lock, what="run folder", hint=LOCK_HINT):
        return _bind(run_dir, fingerprint, resume=resume)


def _bind(run_dir: Path, fingerprint: Mapping[str, Any], *, resume: bool) -> bool:
    predictions = run_dir / PREDICTIONS_FILE
    if not resume:
        predictions.unlink(missing_ok=True)
    has_predictions = check_bindable(run_dir, fingerprint, resume=resume)
    write_json_atomic(
        run_dir / FINGERPRINT_FILE, {"id": fingerprint_id(fingerprint), "fingerprint": dict(fingerprint)}
    )
    return has_predictions


def check_bindable(
    run_dir: str | Path,
    fingerprint: Mapping[str, Any],
    *,
    resume: bool = True,
    only: Sequence[str] | None = None,
) -> bool:
    """What :func:`bind_run` would decide for ``run_dir``, with nothing written: True when it would
    resume earlier predictions, :class:`StaleRunError` when it would refuse them. A command that
    writes elsewhere first (the pooled data of its work folder) asks this before, so a refused run
    leaves every file as it was.

    Args:
        run_dir: The run folder.
        fingerprint: The run's inputs (:func:`run_fingerprint`).
        resume: As in :func:`bind_run`: False would start over, and is never refused.
        only: Compare these top-level keys alone (a part of the fingerprint known early, such as
            ``data`` before the index is built); None: the whole fingerprint.
    """
    predictions = Path(run_dir) / PREDICTIONS_FILE
    if not resume or not predictions.is_file() or predictions.stat().st_size == 0:
        return False
    old = read_fingerprint(run_dir)
    ways_out = "set a new eval.name to keep both runs, or pass --no-resume to start this one over"
    if old is None:
        raise StaleRunError(
            f"{run_dir} holds predictions with no recorded inputs (run.json is missing); {ways_out}"
        )
    if only is not None:
        old = {k: old.get(k, _MISSING) for k in only}
        fingerprint = {k: fingerprint.get(k, _MISSING) for k in only}
    changed = differing_keys(old, fingerprint)
    if changed:
        shown = ", ".join(changed[:KEYS_SHOWN])
        more = f" and {len(changed) - KEYS_SHOWN} more" if len(changed) > KEYS_SHOWN else ""
        raise StaleRunError(
            f"{run_dir} was computed with other inputs (differing: {shown}{more}); {ways_out}"
        )
    return True


# Settings that change how fast something runs, never what it returns: those whose field declares
# the role anywhere in a run's config, left out of fingerprints by name wherever they appear.
SPEED_ONLY_SETTINGS = settings_in_tree(ExperimentConfig, SPEED_ONLY)


def run_fingerprint(
    cfg: ExperimentConfig, method: str, retriever: Any, pooled: PooledDataset, models: dict[str, str]
) -> dict[str, Any]:
    """Everything an evaluation run's predictions depend on.

    Args:
        cfg: the run's experiment config.
        method: the run's method name (``direct_r_qa`` for Direct-R's answering run).
        retriever: the backend the method searches.
        pooled: the data the questions come from (all of its questions are hashed, so an edited
            file is a new run even where the selected questions did not change).
        models: content hashes of the model folders the method reads
            (:func:`efficientrag.experiment.assembly.check_model_folders`).

    Returns:
        The nested mapping :func:`bind_run` records and compares.
    """
    retriever_settings = to_dict(cfg.retriever, checks=False)
    retriever_settings.pop("index_dir", None)  # where the index lies, not what it holds
    return {
        "method": method,
        "settings": method_settings(cfg, method),
        "eval": {"ks": list(cfg.eval.ks), "answer": cfg.eval.answer},
        "retriever": _drop_speed_only(retriever_settings),
        "models": models,
        **index_and_data(retriever, pooled.examples),
    }


def method_settings(cfg: ExperimentConfig, method: str) -> dict[str, Any]:
    """The config sections that decide a method's predictions (and nothing that only changes
    speed), keyed by their dotted config key: its own section and, when it answers, the prompts,
    the temperature, the judge (when enabled) and the generator. A method the registry does not
    know gets the whole ``baselines`` section."""
    key = registered_name(method)
    cls = METHODS.get(key)
    settings: dict[str, Any] = {}
    if cls is None:
        settings["baselines"] = to_dict(cfg.baselines)
    else:
        if key == "efficientrag":
            own = loop_fingerprint(cfg.efficientrag, answers=True)
        else:
            own = to_dict(cls.settings(cfg))
            for path_key in cls.model_fields:  # their content is hashed under models.*
                own.pop(path_key)
        settings[cls.section_key()] = own
    if cls is None or not cls.retrieval_only or cfg.eval.answer:
        settings["baselines.prompts"] = to_dict(cfg.baselines.prompts)
        settings["baselines.temperature"] = cfg.baselines.temperature
        if cfg.baselines.judge.enabled:
            settings["baselines.judge"] = to_dict(cfg.baselines.judge)
        backend = cfg.generator.backend
        chosen = cfg.generator.hf if backend == "hf" else cfg.generator.openai
        settings["generator"] = {"backend": backend, backend: to_dict(chosen)}
    return _drop_speed_only(settings)


def loop_fingerprint(
    cfg: EfficientRAGConfig, *, answers: bool, quantize: str | None = None, model_digests: bool = False
) -> dict[str, Any]:
    """The loop's settings as every fingerprint records them (a run's, a job stage's, a cache
    folder's): its model folders left out, and settings that change only speed, the
    settings added later at their default (:func:`efficientrag.setting_fields.quiet_at_default`), and
    (when nothing is answered) the answer call's.

    Args:
        cfg: The loop's settings.
        answers: Whether the results include answers, so the answer call's settings decide them.
        quantize: The inference path the models run on; None resolves ``cfg.quantize`` (``auto``
            becomes what this machine runs, not the wish).
        model_digests: Add ``models``: the content digest of each model folder ``cfg`` names, for a
            key that has no other record of them (a run fingerprint hashes them under its own
            ``models``).

    Returns:
        Plain data to record and compare.
    """
    from efficientrag.models.export import resolve_quantize

    folders = METHODS["efficientrag"].model_fields
    skipped = {*folders, *(() if answers else ANSWER_SETTINGS)}
    out = {k: v for k, v in fingerprinted(cfg).items() if k not in skipped}
    out["quantize"] = quantize if quantize is not None else resolve_quantize(cfg.quantize, cfg.device)
    if model_digests:
        named = {kind: getattr(cfg, name) for name, kind in folders.items() if getattr(cfg, name) is not None}
        out["models"] = {kind: folder_digest(str(path)) for kind, path in named.items()}
        if cfg.exit_threshold is not None and "labeler" in named:
            from efficientrag.models.early_exit import early_exit_digest

            out["models"]["early_exit"] = early_exit_digest(named["labeler"])
    return _drop_speed_only(out)


def index_and_data(retriever: Any, examples: Sequence[Example]) -> dict[str, str]:
    """The two inputs every evaluation depends on besides its method: what the index holds and
    which questions (with their gold) it answers. Callers that assemble a fingerprint of their
    own (the quickstart, the TreeHop benchmarks) start from these."""
    return {"index": retriever_fingerprint(retriever), "data": examples_digest(list(examples))}


def examples_digest(examples: list[Example]) -> str:
    """The questions, answers and gold of a data file, in order (a changed file changes this)."""
    return json_digest([[ex.id, ex.question, ex.answers, ex.gold_chunk_ids] for ex in examples])


def _drop_speed_only(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _drop_speed_only(v) for k, v in node.items() if k not in SPEED_ONLY_SETTINGS}
    return node


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
