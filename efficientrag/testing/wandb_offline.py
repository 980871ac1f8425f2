"""Read back what an offline Weights & Biases run recorded, with no server and no network.

An offline run keeps everything it logged (config, history, summary) only in its
``run-<id>.wandb`` file; ``files/config.yaml`` and ``files/wandb-summary.json`` are written when a
run is synced or online, not offline. Tests that check what training sends to W&B therefore read
that file: a LevelDB-style log (32 KiB blocks, each record a 7-byte header of CRC, little-endian
length and fragment type, then the payload) behind a 7-byte ``:W&B`` header, whose payloads are
``wandb.proto`` ``Record`` messages.

``run.finish()`` returns before W&B's service has flushed that file (seen with wandb 0.31: right
after ``finish`` the file can still hold only its header). Call ``wandb.teardown()`` first, or read
it from another process after the training process exited; a file without the run's exit record
is refused rather than read as a shorter run.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_FILE_MAGIC = b":W&B"
_FILE_HEADER = 7  # magic, 0xBEE1, format version
_BLOCK = 32 * 1024
_RECORD_HEADER = struct.Struct("<IHB")  # crc32, length, fragment type
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


@dataclass
class OfflineRun:
    """The run's config (key -> value), history (one dict per ``log`` call, with ``_step``) and
    final summary."""

    run_id: str
    project: str
    name: str
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    def series(self, key: str) -> list[tuple[int, Any]]:
        """``(step, value)`` of every history row that logged ``key``."""
        return [(row["_step"], row[key]) for row in self.history if key in row]


def find_offline_runs(wandb_dir: str | Path) -> list[Path]:
    """The ``offline-run-*`` folders under a ``wandb/`` folder, oldest first."""
    return sorted(Path(wandb_dir).glob("offline-run-*"))


def read_offline_run(run_dir: str | Path) -> OfflineRun:
    """Parse the one ``run-*.wandb`` file of ``run_dir`` (an ``offline-run-*`` folder)."""
    from wandb.proto import wandb_internal_pb2 as pb

    files = sorted(Path(run_dir).glob("run-*.wandb"))
    if len(files) != 1:
        raise FileNotFoundError(f"{run_dir}: expected one run-*.wandb file, found {[f.name for f in files]}")
    run = OfflineRun(run_id="", project="", name="")
    finished = False
    for payload in _payloads(files[0]):
        record = pb.Record.FromString(payload)
        kind = record.WhichOneof("record_type")
        finished = finished or kind == "exit"
        if kind == "run":
            run.run_id, run.project, run.name = (
                record.run.run_id,
                record.run.project,
                record.run.display_name,
            )
            _apply(run.config, record.run.config.update)
        elif kind == "config":
            _apply(run.config, record.config.update)
        elif kind == "history":
            row: dict[str, Any] = {}
            _apply(row, record.history.item)
            run.history.append(row)
        elif kind == "summary":
            _apply(run.summary, record.summary.update)
    if not finished:
        raise ValueError(
            f"{files[0]}: no exit record, so the run is still running or not yet flushed "
            "(call wandb.teardown() after the run finishes, or wait for its process to exit)"
        )
    return run


def _apply(target: dict[str, Any], items: Any) -> None:
    for item in items:
        key = item.key or "/".join(item.nested_key)
        target[key] = json.loads(item.value_json)


def _payloads(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if data[: len(_FILE_MAGIC)] != _FILE_MAGIC:
        raise ValueError(f"{path}: not a W&B run file (no {_FILE_MAGIC!r} header)")
    out: list[bytes] = []
    pending = b""
    pos = _FILE_HEADER
    while pos + _RECORD_HEADER.size <= len(data):
        room = _BLOCK - pos % _BLOCK
        if room < _RECORD_HEADER.size:  # the block's tail is zero padding
            pos += room
            continue
        _, length, kind = _RECORD_HEADER.unpack_from(data, pos)
        start = pos + _RECORD_HEADER.size
        if kind == 0:  # zero padding up to the end of the block
            pos += room
            continue
        if start + length > len(data):
            raise ValueError(f"{path}: record at byte {pos} runs past the end of the file (truncated)")
        chunk = data[start : start + length]
        pos = start + length
        if kind == _FULL:
            out.append(chunk)
        elif kind == _FIRST:
            pending = chunk
        elif kind == _MIDDLE:
            pending += chunk
        elif kind == _LAST:
            out.append(pending + chunk)
            pending = b""
        else:
            raise ValueError(f"{path}: unknown record type {kind} at byte {pos}")
    return out
