"""A run folder is bound to the inputs that determined its predictions.

Resuming by question id alone would report old predictions after a change of corpus, models or
settings. So every run folder records a fingerprint (``run.json``): a flat mapping from dotted keys
(``settings.efficientrag.top_k``, ``models.labeler``, ``index``, ``data`` ...) to values or content
hashes. A rerun whose fingerprint differs is refused, naming the keys that differ; the user picks a
new folder (``eval.name=...``) or starts over (``--no-resume``). A new folder is not made silently:
two folders for one method would leave a reader guessing which numbers are current.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from efficientrag.atomic import write_json_atomic
from efficientrag.config import flatten
from efficientrag.fingerprint import json_digest
from efficientrag.run_lock import folder_lock

FINGERPRINT_FILE = "run.json"
PREDICTIONS_FILE = "predictions.jsonl"
# The last words of a refusal to use a folder another process is writing.
LOCK_HINT = "wait for it to finish, or pass --wait (eval.wait_for_lock=true) to run after it"
# Differing keys named in the refusal; the rest are counted.
KEYS_SHOWN = 6


class StaleRunError(ValueError):
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
    ``wait_for_lock``. A caller that goes on to write predictions holds the lock around both
    (:func:`efficientrag.eval.runner.run_method` does).
    """
    run_dir = Path(run_dir)
    with folder_lock(run_dir, wait=wait_for_lock, what="run folder", hint=LOCK_HINT):
        return _bind(run_dir, fingerprint, resume=resume)


def _bind(run_dir: Path, fingerprint: Mapping[str, Any], *, resume: bool) -> bool:
    predictions = run_dir / PREDICTIONS_FILE
    has_predictions = predictions.is_file() and predictions.stat().st_size > 0
    if not resume:
        predictions.unlink(missing_ok=True)
        has_predictions = False
    if has_predictions:
        old = read_fingerprint(run_dir)
        ways_out = "set a new eval.name to keep both runs, or pass --no-resume to start this one over"
        if old is None:
            raise StaleRunError(
                f"{run_dir} holds predictions with no recorded inputs (run.json is missing); {ways_out}"
            )
        changed = differing_keys(old, fingerprint)
        if changed:
            shown = ", ".join(changed[:KEYS_SHOWN])
            more = f" and {len(changed) - KEYS_SHOWN} more" if len(changed) > KEYS_SHOWN else ""
            raise StaleRunError(
                f"{run_dir} was computed with other inputs (differing: {shown}{more}); {ways_out}"
            )
    write_json_atomic(
        run_dir / FINGERPRINT_FILE, {"id": fingerprint_id(fingerprint), "fingerprint": dict(fingerprint)}
    )
    return has_predictions


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
