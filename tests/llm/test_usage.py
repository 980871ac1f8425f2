"""A resumable job's usage file covers every run in its folder, not just the last one."""

import json

import pytest

from efficientrag.llm.response import TokenUsage
from efficientrag.llm.usage import UsageTracker, add_run_to_usage_file


def run_summary(billed: int, cached: int) -> dict:
    tracker = UsageTracker()
    for _ in range(billed):
        tracker.record_response(
            "label", "m", TokenUsage(prompt_tokens=100, completion_tokens=10), cached=False
        )
    for _ in range(cached):
        tracker.record_response(
            "label", "m", TokenUsage(prompt_tokens=100, completion_tokens=10), cached=True
        )
    tracker.record_error("next_hop", "truncated")
    return tracker.summary()


def test_runs_are_summed_and_each_kept(tmp_path):
    path = tmp_path / "llm_usage.json"
    add_run_to_usage_file(path, "m", run_summary(billed=3, cached=0))
    written = add_run_to_usage_file(path, "m", run_summary(billed=2, cached=3))
    assert written == json.loads(path.read_text())
    assert [r["total"]["calls"] for r in written["runs"]] == [3, 5]
    label = written["stages"]["label"]
    assert (label["calls"], label["cached"], label["prompt_tokens"], label["cached_prompt_tokens"]) == (
        8,
        3,
        500,
        300,
    )
    assert written["stages"]["next_hop"]["errors"] == {"truncated": 2}
    assert written["total"]["completion_tokens"] == 50
    assert all(r["finished_at"] for r in written["runs"])


def test_a_file_from_before_runs_were_kept_counts_as_one_run(tmp_path):
    path = tmp_path / "llm_usage.json"
    path.write_text(json.dumps({"model": "m", **run_summary(billed=4, cached=0)}))
    written = add_run_to_usage_file(path, "m", run_summary(billed=1, cached=0))
    assert len(written["runs"]) == 2
    assert written["total"]["prompt_tokens"] == 500


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"])
def test_an_unreadable_file_is_moved_aside_not_lost(tmp_path, text, caplog):
    path = tmp_path / "llm_usage.json"
    path.write_text(text)
    written = add_run_to_usage_file(path, "m", run_summary(billed=1, cached=0))
    assert (tmp_path / "llm_usage.json.unreadable").read_text() == text
    assert len(written["runs"]) == 1 and written["total"]["calls"] == 1
    assert "unreadable" in caplog.text
