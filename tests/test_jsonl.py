import json
import os

import pytest

from efficientrag.errors import DataFormatError
from efficientrag.jsonl import JsonlAppender, read_done_ids, read_jsonl, write_jsonl


def test_bad_line_names_file_and_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"id": 1}\n{"id": 2\n{"id": 3}\n')
    with pytest.raises(DataFormatError) as err:
        list(read_jsonl(p))
    assert str(p) in str(err.value) and "line 2" in str(err.value)


def test_appender_repairs_torn_tail(tmp_path):
    p = tmp_path / "out.jsonl"
    p.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "x": [1, 2')  # killed mid-write
    assert read_done_ids(p) == {"a", "b"}
    with JsonlAppender(p) as w:
        assert w.cut_bytes > 0
        w.write({"id": "c"})
    assert [r["id"] for r in read_jsonl(p)] == ["a", "b", "c"]


def test_write_jsonl_is_atomic_and_roundtrips(tmp_path):
    p = tmp_path / "sub" / "y.jsonl"
    n = write_jsonl(p, ({"id": i, "t": "é"} for i in range(3)))
    assert n == 3 and not (tmp_path / "sub" / "y.jsonl.tmp").exists()
    assert [json.loads(line)["id"] for line in p.read_text(encoding="utf-8").splitlines()] == [0, 1, 2]


def test_appender_syncs_per_record_or_by_time(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr("efficientrag.jsonl.os.fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    with JsonlAppender(tmp_path / "a.jsonl") as per_record:
        for i in range(3):
            per_record.write({"id": i})
    assert len(synced) == 4  # one per record, one on close
    synced.clear()
    with JsonlAppender(tmp_path / "b.jsonl", sync_seconds=3600) as by_time:
        for i in range(3):
            by_time.write({"id": i})
        assert not synced and len((tmp_path / "b.jsonl").read_text().splitlines()) == 3  # flushed
    assert len(synced) == 1  # on close
    synced.clear()
    with JsonlAppender(tmp_path / "c.jsonl", sync_seconds=0.0) as always:
        always.write({"id": 0})
    assert len(synced) == 2
