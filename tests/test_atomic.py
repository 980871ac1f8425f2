"""The one atomic-write helper: a writer that fails leaves the old file (or folder) untouched and no
temp file behind, and what it wrote reaches the disk (fsync) before it replaces the target."""

import json
import os

import numpy as np
import pytest

from efficientrag import atomic
from efficientrag.atomic import (
    atomic_folder,
    atomic_open,
    atomic_path,
    replace_folder,
    staging_folder,
    write_json_atomic,
    write_text_atomic,
)
from efficientrag.jsonl import read_jsonl, write_jsonl


def test_a_failing_writer_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "summary.json"
    write_json_atomic(target, {"n": 1})
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write('{"n": 2')
        raise RuntimeError("killed mid-write")
    assert json.loads(target.read_text(encoding="utf-8")) == {"n": 1}
    assert os.listdir(tmp_path) == ["summary.json"]


def test_the_file_and_its_folder_are_fsynced_before_the_rename_counts(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(
        atomic.os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")) or real_fsync(fd)
    )
    target = tmp_path / "sub" / "table.md"
    write_text_atomic(target, "| a |\n")
    assert target.read_text(encoding="utf-8") == "| a |\n"
    assert any(p.endswith(".tmp") and ".table.md." in p for p in synced)  # the data, before the rename
    assert str(tmp_path / "sub") in synced  # the rename itself


def test_atomic_path_serves_writers_that_take_a_file_name(tmp_path):
    target = tmp_path / "shard.npy"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp != target
        with open(tmp, "wb") as fh:
            np.save(fh, np.arange(3, dtype=np.float32))
        assert not target.exists()
    assert np.load(target).tolist() == [0.0, 1.0, 2.0]
    assert os.listdir(tmp_path) == ["shard.npy"]


def test_binary_mode_and_bad_modes(tmp_path):
    with atomic_open(tmp_path / "b.bin", "wb") as fh:
        fh.write(b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(ValueError, match="whole files"), atomic_open(tmp_path / "c.txt", "a"):
        pass


def test_a_folder_is_swapped_in_whole_or_not_at_all(tmp_path):
    folder = tmp_path / "best"
    with atomic_folder(folder) as tmp:
        (tmp / "weights").write_text("v1")
    with pytest.raises(RuntimeError), atomic_folder(folder) as tmp:
        (tmp / "weights").write_text("v2, half")
        raise RuntimeError("killed")
    assert (folder / "weights").read_text() == "v1"
    assert sorted(os.listdir(tmp_path)) == ["best"]

    staged = staging_folder(folder)
    staged.mkdir()
    (staged / "weights").write_text("v3")
    replace_folder(staged, folder)
    assert (folder / "weights").read_text() == "v3"
    assert sorted(os.listdir(tmp_path)) == ["best"]  # no .tmp, no .old


def test_write_jsonl_keeps_the_old_file_when_the_records_fail(tmp_path):
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [{"id": 1}])

    def records():
        yield {"id": 2}
        raise ValueError("bad record")

    with pytest.raises(ValueError):
        write_jsonl(path, records())
    assert list(read_jsonl(path)) == [{"id": 1}]
