"""Runs any method over examples with resumable per-example output and writes the summary.

Output folder: ``predictions.jsonl`` (one record per example, appended as batches finish, so a
crash loses at most the batch in flight), ``errors.jsonl`` (examples the method failed on, with the
reason; rerunning retries them), ``summary.json`` and ``table.md`` (rebuilt from all records, so a
resumed run reports exactly what an uninterrupted run would).
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from efficientrag.baselines.base import Method, Prediction
from efficientrag.data.schema import Example
from efficientrag.eval.scoring import prediction_record
from efficientrag.eval.summary import summarize_records
from efficientrag.eval.tables import summary_table
from efficientrag.jsonl import JsonlAppender, read_done_ids, read_jsonl, write_jsonl

log = logging.getLogger(__name__)

RecordHook = Callable[[dict[str, Any], Prediction, Example], None]


def run_method(
    method: Method,
    examples: Sequence[Example],
    out_dir: str | Path,
    *,
    ks: Sequence[int] = (2, 4, 6, 10, 20),
    batch_size: int = 32,
    resume: bool = True,
    record_hooks: Sequence[RecordHook] = (),
    meta: dict[str, Any] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Evaluate ``method`` on ``examples``; returns the summary dict (also written to disk)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pred_path = out / "predictions.jsonl"
    err_path = out / "errors.jsonl"
    if not resume:
        for p in (pred_path, err_path):
            p.unlink(missing_ok=True)
    done = read_done_ids(pred_path)
    todo = [ex for ex in examples if ex.id not in done]
    if done:
        log.info("resuming %s: %d done, %d to go", out, len(done), len(todo))
    err_path.unlink(missing_ok=True)  # failures are retried on every run
    errors: list[dict[str, Any]] = []
    started = time.perf_counter()
    bar = tqdm(total=len(todo), desc=f"eval {method.name}", unit="q", disable=not progress)
    with JsonlAppender(pred_path, sync_every=batch_size) as writer:
        for i in range(0, len(todo), batch_size):
            batch = list(todo[i : i + batch_size])
            for ex, pred in _run_batch_safely(method, batch, errors):
                record = prediction_record(pred, ex, ks)
                for hook in record_hooks:
                    hook(record, pred, ex)
                writer.write(record)
            bar.update(len(batch))
            bar.set_postfix(errors=len(errors))
    bar.close()
    if errors:
        write_jsonl(err_path, errors)
        log.warning("%d examples failed; see %s", len(errors), err_path)
    wanted = {ex.id for ex in examples}
    records = [r for r in read_jsonl(pred_path) if r["id"] in wanted]
    summary = summarize_records(records, ks=ks)
    summary.update(
        {
            "method": method.name,
            "num_examples": len(examples),
            "num_failed": len(errors),
            "wall_time_s_this_run": time.perf_counter() - started,
            **(meta or {}),
        }
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (out / "table.md").write_text(summary_table([summary]) + "\n", encoding="utf-8")
    return summary


def _run_batch_safely(
    method: Method, batch: list[Example], errors: list[dict[str, Any]]
) -> list[tuple[Example, Prediction]]:
    """A failing batch is retried one example at a time, so one bad example costs only itself."""
    try:
        preds = method.run_batch(batch)
        return list(zip(batch, preds, strict=True))
    except Exception:  # noqa: BLE001 - any method failure is recorded, never fatal
        if len(batch) == 1:
            errors.append(_error_record(batch[0]))
            return []
    out = []
    for ex in batch:
        try:
            out.append((ex, method.run_batch([ex])[0]))
        except Exception:  # noqa: BLE001
            errors.append(_error_record(ex))
    return out


def _error_record(ex: Example) -> dict[str, Any]:
    return {"id": ex.id, "question": ex.question, "error": traceback.format_exc(limit=3)}
