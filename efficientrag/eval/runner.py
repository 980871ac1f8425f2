"""Runs any method over examples with resumable per-example output and writes the summary.

Output folder: ``run.json`` (the fingerprint of the inputs the predictions were made under: a rerun
with other inputs is refused, see :mod:`efficientrag.experiment.run_binding`), ``predictions.jsonl`` (one
record per example, appended as each batch finishes), ``errors.jsonl`` (examples the method failed
on, with the reason; rerunning retries them), ``summary.json`` and ``table.md`` (rebuilt from all
records, so a resumed run reports exactly what an uninterrupted run would), and ``.lock`` (one
process writes a folder at a time: :mod:`efficientrag.run_lock`; a folder that already holds an id
twice keeps the first on resume).

Failures are cheap to learn about: a batch that fails is retried one question at a time (one bad
question costs only itself) unless its error can only repeat for every question (an unreachable
endpoint, a rejected key, a bad setting), and a run whose first ``fail_fast_after`` questions all
fail with the same error stops there (:class:`RunAbortedError`). SIGINT/SIGTERM finish the batch in
flight, write it, and raise :class:`~efficientrag.eval.interrupts.RunInterrupted`.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from efficientrag.atomic import write_json_atomic, write_text_atomic
from efficientrag.baselines.base import Prediction, Runnable
from efficientrag.config import save_config
from efficientrag.data.schema import Example
from efficientrag.errors import EfficientRAGError
from efficientrag.eval.interrupts import RunInterrupted, StopRequests
from efficientrag.eval.scoring import prediction_record
from efficientrag.eval.summary import summarize_records
from efficientrag.eval.tables import summary_table
from efficientrag.experiment.run_binding import LOCK_HINT, PREDICTIONS_FILE, bind_run, fingerprint_id
from efficientrag.jsonl import JsonlAppender, drop_duplicate_ids, read_done_ids, read_jsonl, write_jsonl
from efficientrag.llm.errors import EndpointUnreachableError, LLMAuthError, LLMConfigError
from efficientrag.llm.generator import GeneratorCapabilityError
from efficientrag.run_lock import folder_lock

log = logging.getLogger(__name__)

RecordHook = Callable[[dict[str, Any], Prediction, Example], None]
ERRORS_FILE = "errors.jsonl"

# Errors that say nothing about the question: asking again one question at a time only repeats them.
RUN_LEVEL_ERRORS: tuple[type[BaseException], ...] = (
    EndpointUnreachableError,
    LLMAuthError,
    LLMConfigError,
    GeneratorCapabilityError,
)


class RunAbortedError(EfficientRAGError, RuntimeError):
    """The first questions of a run all failed with the same error; the rest would too."""

    def __init__(self, message: str, *, errors_file: Path) -> None:
        super().__init__(message)
        self.errors_file = errors_file


def run_method(
    method: Runnable,
    examples: Sequence[Example],
    out_dir: str | Path,
    *,
    ks: Sequence[int] = (2, 4, 6, 10, 20),
    batch_size: int = 32,
    resume: bool = True,
    fingerprint: Mapping[str, Any] | None = None,
    fail_fast_after: int = 3,
    record_hooks: Sequence[RecordHook] = (),
    meta: dict[str, Any] | None = None,
    progress: bool = True,
    wait_for_lock: bool = False,
    config: Any = None,
) -> dict[str, Any]:
    """Evaluate ``method`` on ``examples``; returns the summary dict (also written to disk).

    The lowest level of an evaluation, for a method already built and a fingerprint already made;
    :func:`efficientrag.eval.evaluation.evaluate` builds both from an experiment config. The folder
    is locked for the whole run (:func:`efficientrag.run_lock.folder_lock`), from binding it to
    writing the summary.

    Args:
        method: the method (or the judge around it).
        examples: the questions to evaluate; those already in the folder's predictions are skipped.
        out_dir: the run folder.
        ks: the cut-offs a ranked list of chunks is scored at.
        batch_size: questions per ``run_batch`` call (and per flush of the predictions file).
        resume: keep the folder's earlier predictions (refused when made under another
            fingerprint); False deletes them first.
        fingerprint: what determines the predictions
            (:func:`efficientrag.experiment.run_binding.run_fingerprint`); without one, only the method
            name and ``ks`` are recorded, so a caller that varies anything else must pass it.
        fail_fast_after: stop when the first this-many questions all fail alike (0: never).
        record_hooks: called with each record, its prediction and example before it is written.
        meta: extra keys for the summary (dataset, retriever ...).
        progress: show a progress bar.
        wait_for_lock: wait for another process writing the folder instead of raising
            :class:`~efficientrag.run_lock.FolderLockedError`.
        config: a config to save as the folder's ``config.yaml`` once the folder is bound (a
            refused folder keeps its own).

    Returns:
        The summary, as written to ``summary.json``.
    """
    out = Path(out_dir)
    fingerprint = (
        dict(fingerprint) if fingerprint is not None else {"method": method.name, "eval.ks": list(ks)}
    )
    with folder_lock(out, wait=wait_for_lock, what="run folder", hint=LOCK_HINT):
        bind_run(out, fingerprint, resume=resume)
        if config is not None:
            save_config(config, out / "config.yaml")
        # Ids written twice (two runs at once, before folders were locked) are counted once.
        drop_duplicate_ids(out / PREDICTIONS_FILE)
        return _evaluate(
            method,
            examples,
            out,
            ks=ks,
            batch_size=batch_size,
            fingerprint=fingerprint,
            fail_fast_after=fail_fast_after,
            record_hooks=record_hooks,
            meta=meta,
            progress=progress,
        )


def _evaluate(
    method: Runnable,
    examples: Sequence[Example],
    out: Path,
    *,
    ks: Sequence[int],
    batch_size: int,
    fingerprint: dict[str, Any],
    fail_fast_after: int,
    record_hooks: Sequence[RecordHook],
    meta: dict[str, Any] | None,
    progress: bool,
) -> dict[str, Any]:
    """:func:`run_method` on a folder that is locked and bound to ``fingerprint``."""
    pred_path = out / PREDICTIONS_FILE
    err_path = out / ERRORS_FILE
    err_path.unlink(missing_ok=True)  # failures are retried on every run
    done = read_done_ids(pred_path)
    todo = [ex for ex in examples if ex.id not in done]
    if done:
        log.info("resuming %s: %d done, %d to go", out, len(done), len(todo))
    errors: list[dict[str, Any]] = []
    succeeded = 0
    aborted: str | None = None
    interrupted: RunInterrupted | None = None
    started = time.perf_counter()
    bar = tqdm(total=len(todo), desc=f"eval {method.name}", unit="q", disable=not progress)
    with (
        StopRequests(f"eval {method.name}") as stop,
        JsonlAppender(pred_path, sync_every=batch_size) as writer,
    ):
        try:
            for i in range(0, len(todo), batch_size):
                if stop.requested is not None:
                    break
                batch = list(todo[i : i + batch_size])
                for ex, pred in _run_batch_safely(method, batch, errors):
                    record = prediction_record(pred, ex, ks)
                    for hook in record_hooks:
                        hook(record, pred, ex)
                    writer.write(record)
                    succeeded += 1
                bar.update(len(batch))
                bar.set_postfix(errors=len(errors))
                aborted = _fail_fast_reason(errors, succeeded, fail_fast_after)
                if aborted:
                    break
        except RunInterrupted as exc:
            interrupted = exc
        # Written with the handlers still installed: a further signal now only says "stopping".
        stop.finishing = True
        bar.close()
        if interrupted is None and stop.requested is not None:
            interrupted = RunInterrupted(stop.requested)
        summary = _write_summary(
            method.name,
            examples,
            out,
            errors,
            ks=ks,
            meta={
                "fingerprint_id": fingerprint_id(fingerprint),
                "wall_time_s_this_run": time.perf_counter() - started,
                **(meta or {}),
            },
        )
    if interrupted is not None:
        done = summary["n"]
        raise RunInterrupted(interrupted.signum, done=done, to_go=len(examples) - done)
    if aborted:
        raise RunAbortedError(
            f"stopped: the first {len(errors)} questions all failed with the same error: {aborted} "
            f"(details in {err_path})",
            errors_file=err_path,
        )
    return summary


def _write_summary(
    name: str,
    examples: Sequence[Example],
    out: Path,
    errors: list[dict[str, Any]],
    *,
    ks: Sequence[int],
    meta: dict[str, Any],
) -> dict[str, Any]:
    """``errors.jsonl``, then ``summary.json`` and ``table.md`` from every record of ``examples``
    in the folder (earlier runs' included), so a resumed run reports what one run would."""
    err_path = out / ERRORS_FILE
    if errors:
        write_jsonl(err_path, errors)
        log.warning("%d examples failed; see %s", len(errors), err_path)
    wanted = {ex.id for ex in examples}
    records = [r for r in read_jsonl(out / PREDICTIONS_FILE, allow_torn_tail=True) if r["id"] in wanted]
    summary = summarize_records(records, ks=ks)
    summary.update(
        {
            "method": name,
            "num_examples": len(examples),
            "num_failed": len(errors),
            "errors_file": str(err_path) if errors else None,
            **meta,
        }
    )
    write_json_atomic(out / "summary.json", summary, indent=2)
    write_text_atomic(out / "table.md", summary_table([summary]) + "\n")
    return summary


def _fail_fast_reason(errors: list[dict[str, Any]], succeeded: int, after: int) -> str | None:
    """The shared error when the run's first ``after`` (or more) questions all failed alike."""
    if after <= 0 or succeeded or len(errors) < after:
        return None
    kinds = {e["error"] for e in errors}
    return next(iter(kinds)) if len(kinds) == 1 else None


def _run_batch_safely(
    method: Runnable, batch: list[Example], errors: list[dict[str, Any]]
) -> list[tuple[Example, Prediction]]:
    """A failing batch is retried one example at a time, so one bad example costs only itself."""
    try:
        preds = method.run_batch(batch)
        return list(zip(batch, preds, strict=True))
    except RUN_LEVEL_ERRORS as exc:
        errors.extend(_error_record(ex, exc) for ex in batch)
        return []
    except Exception as exc:  # noqa: BLE001 - any method failure is recorded, never fatal
        if len(batch) == 1:
            errors.append(_error_record(batch[0], exc))
            return []
    out = []
    for ex in batch:
        try:
            out.append((ex, method.run_batch([ex])[0]))
        except Exception as exc:  # noqa: BLE001
            errors.append(_error_record(ex, exc))
    return out


def _error_record(ex: Example, exc: BaseException) -> dict[str, Any]:
    first_line = (str(exc).strip().splitlines() or [""])[0]
    return {
        "id": ex.id,
        "question": ex.question,
        "error": f"{type(exc).__name__}: {first_line}",
        "traceback": "".join(traceback.format_exception(exc, limit=-3)),
    }
