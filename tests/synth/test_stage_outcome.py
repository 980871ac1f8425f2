"""Stage counts read back from a synthesis folder, and a run started from another's finished stage."""

import json

import pytest

from efficientrag.synth.stage_outcome import copy_finished_stage, stage_outcome


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_outcome_counts_kept_rejected_and_reasons(tmp_path):
    assert stage_outcome(tmp_path, "label") == {"kept": 0, "rejected": 0, "reasons": {}}
    write(tmp_path / "labeled.jsonl", [{"id": "q#0"}, {"id": "q#1"}])
    write(
        tmp_path / "label.rejects.jsonl",
        [{"id": "a", "reason": "not JSON"}] * 2 + [{"id": "b", "reason": "empty"}],
    )
    # A torn last line (a run killed mid-write) is not counted as a record.
    with (tmp_path / "labeled.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"id": "q#2", "chu')
    assert stage_outcome(tmp_path, "label") == {
        "kept": 2,
        "rejected": 3,
        "reasons": {"not JSON": 2, "empty": 1},
    }
    write(tmp_path / "next_hop.jsonl", [{"id": "q#0"}])
    assert stage_outcome(tmp_path, "next_hop")["kept"] == 1


def test_copy_refuses_an_unfinished_stage_and_never_overwrites(tmp_path):
    src, dst = tmp_path / "annotations", tmp_path / "llm-given-decompositions"
    src.mkdir()
    write(src / "decomposed.jsonl", [{"id": "q"}])
    with pytest.raises(FileNotFoundError, match="'decompose' has not finished"):
        copy_finished_stage(src, dst, "decompose")
    (src / "decompose.meta.json").write_text("{}", encoding="utf-8")
    (src / "decompose.done.json").write_text("{}", encoding="utf-8")
    dst.mkdir()
    write(dst / "decomposed.jsonl", [{"id": "kept from an earlier run"}])
    copy_finished_stage(src, dst, "decompose")
    # An earlier run's file is never overwritten (the run resumes on it); missing ones are copied.
    assert "earlier run" in (dst / "decomposed.jsonl").read_text(encoding="utf-8")
    assert (dst / "decompose.done.json").is_file() and (dst / "decompose.meta.json").is_file()
    assert not (dst / "decompose.rejects.jsonl").exists()
