"""An experiment's pooled data under ``work_dir/data``: read once, reused while its inputs stand.

Every step (``corpus``, ``index``, ``eval``, ``retrieve``, ``serve``) starts from the same pooled
corpus and examples, so they are prepared once and bound to the data settings and the contents of
the files they were read from: an edited file is read again, and a work folder that holds another
corpus is refused rather than overwritten (its index and runs belong to that corpus).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from efficientrag.atomic import write_json_atomic
from efficientrag.config_values import to_dict
from efficientrag.data.config import DataConfig
from efficientrag.data.loader import load_data, load_prepared, report_skipped, save_prepared
from efficientrag.data.pooling import PooledDataset
from efficientrag.errors import EfficientRAGError
from efficientrag.experiment.config import ExperimentConfig
from efficientrag.fingerprint import file_digest

DATA_CONFIG_FILE = "data_config.json"


def prepare_data(cfg: ExperimentConfig, *, rebuild: bool = False) -> PooledDataset:
    """Load the pooled data written by an earlier step when it was built from the same data
    settings and the same file contents; otherwise read the dataset files, pool them and save the
    result. An edited question or corpus file is read again even under the same path."""
    prepared = read_data(cfg, rebuild=rebuild)
    prepared.save()
    return prepared.pooled


@dataclass
class PreparedData:
    """The pooled data of an experiment, and what ``save`` must write for it under ``work_dir/data``
    (nothing where it was read from there). A step that may still refuse its run (another run's
    folder, a stale fingerprint) reads first and saves once it has decided, so a refusal leaves the
    work folder as it was."""

    pooled: PooledDataset
    out: Path
    marker: dict[str, Any] | None = None  # what to record once saved; None: read from ``out``

    def save(self) -> None:
        """Write the pooled data and its marker (once; a no-op when it was read from ``out``)."""
        if self.marker is not None:
            save_prepared(self.pooled, self.out)
            write_json_atomic(self.out / DATA_CONFIG_FILE, self.marker, indent=2)
            self.marker = None
        report_skipped(self.pooled, self.out / "skipped.jsonl")


def read_data(cfg: ExperimentConfig, *, rebuild: bool = False) -> PreparedData:
    """:func:`prepare_data` up to the point of writing: the pooled data, saved only by
    ``PreparedData.save``. A work folder that holds another corpus is refused here, before anything
    is written."""
    out = cfg.data_dir
    saved = _read_marker(out / DATA_CONFIG_FILE)
    files = source_file_digests(cfg.data, saved.get("files", {}) if saved else {})
    wanted = {"config": to_dict(cfg.data), "files": files, "corpus": corpus_files(cfg.data)}
    if not rebuild and saved is not None and saved == wanted:
        return PreparedData(load_prepared(out), out)
    if saved is not None:
        _refuse_another_corpus(cfg, saved, wanted)
    return PreparedData(load_data(cfg.data), out, wanted)


class WorkDirInUseError(EfficientRAGError, ValueError):
    """A work folder already holds another corpus's data (and perhaps its index and runs)."""


def corpus_files(data: DataConfig) -> list[str]:
    """The files the pooled corpus is read from: a ``jsonl`` dataset's corpus file, a benchmark
    file's own paragraphs, and any extra corpus (none for the toy world, which generates its own)."""
    out = []
    for src in data.sources():
        if src.path and src.dataset not in ("jsonl", "toy"):
            out.append(str(src.path))
        if src.corpus_path:
            out.append(str(src.corpus_path))
    return out


def _refuse_another_corpus(cfg: ExperimentConfig, saved: dict[str, Any], wanted: dict[str, Any]) -> None:
    """Stop before anything under ``work_dir`` is overwritten when it was prepared from other corpus
    files (not the same file edited, nor a copy of it moved elsewhere): its index and runs belong
    to that corpus, and `--rebuild` would destroy them."""
    before, now = saved.get("corpus") or [], wanted["corpus"]
    if sorted(before) == sorted(now):
        return
    if before and now and _contents(before, saved.get("files", {})) == _contents(now, wanted["files"]):
        return  # the same corpus under another path
    was = ", ".join(before) or "the toy world"
    reads = ", ".join(now) or "the toy world"
    own = f"--work-dir {default_work_dir(now[0])}" if now else "--work-dir runs/toy"
    raise WorkDirInUseError(
        f"{cfg.work_dir} holds the data (and any index and runs) of {was}; this command reads {reads}. "
        f"Nothing was changed. Give it a folder of its own ({own}), or delete {cfg.work_dir} to replace "
        "what it holds"
    )


def _contents(paths: list[str], files: dict[str, Any]) -> list[str]:
    return sorted(str((files.get(p) or {}).get("sha256", p)) for p in paths)


def default_work_dir(path: str | Path) -> str:
    """The folder a user's own file's runs go to: ``runs/<stem>-<8 hex of its absolute path>``.

    Two corpora called ``corpus.jsonl`` in different folders never share (and overwrite) one data
    folder and index, while ``index``, ``retrieve`` and ``eval`` over one file keep finding each
    other's work, edits of the file included (the index then says it is stale).

    Args:
        path: the corpus file (or, without one, the question file).

    Returns:
        The folder, relative to the working directory, as a string for a ``work_dir=`` override.
    """
    resolved = Path(path).expanduser().resolve()
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", resolved.stem) or "data"
    digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:8]
    return f"runs/{stem}-{digest}"


def source_file_digests(data: DataConfig, known: dict[str, Any]) -> dict[str, Any]:
    """Content hash of every local file the data settings read. A file whose size and modification
    time match ``known`` keeps its recorded hash (no re-read of a large unchanged file)."""
    out: dict[str, Any] = {}
    for src in data.sources():
        for path in (src.path, src.corpus_path):
            if not path or not Path(path).is_file():
                continue
            stat = Path(path).stat()
            seen = known.get(str(path))
            if (
                isinstance(seen, dict)
                and seen.get("size") == stat.st_size
                and seen.get("mtime_ns") == stat.st_mtime_ns
            ):
                out[str(path)] = seen
            else:
                out[str(path)] = {
                    "size": stat.st_size,
                    "mtime_ns": stat.st_mtime_ns,
                    "sha256": file_digest([path]),
                }
    return out


def _read_marker(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def corpus_label(data: DataConfig) -> str:
    """How errors name the corpus of the data settings: its files, or the toy world."""
    return " + ".join(corpus_files(data)) or f"the toy world (data.dataset={data.dataset})"
