"""The containment benchmark: its per-question reading, its swap accounting, and one whole run on
two small toy worlds with random-headed MiniLM models (its numbers say nothing; its shape does)."""

from __future__ import annotations

import pytest

BENCHMARK = "rerank_containment"


def trace_of(first: list[tuple[str, float]], later: list[tuple[str, float]]) -> dict:
    def rows(items):
        return [
            [{"id": c, "score": 1.0, "seen": False, "tag": "terminate", "continue_prob": p} for c, p in items]
        ]

    return {"hops": [{"hits": rows(first)}, {"hits": rows(later)}]}


def test_swaps_count_gold_gained_and_lost_against_the_first_hops_ranking(bench):
    first = [("a", 0.9), ("b", 0.2), ("c", 0.5)]  # the reranker's top 2: a, c
    records = [
        {"retrieved_ids": ["a", "c"], "gold_chunk_ids": ["a", "x"], "trace": trace_of(first, [("x", 0.1)])},
        {"retrieved_ids": ["a", "x"], "gold_chunk_ids": ["a", "x"], "trace": trace_of(first, [("x", 0.8)])},
        {"retrieved_ids": ["x", "a"], "gold_chunk_ids": ["c"], "trace": trace_of(first, [("x", 0.95)])},
    ]
    assert bench.swaps(records, 2) == {"questions": 3.0, "changed": 2.0, "gained": 1.0, "lost": 1.0}


def test_bad_arguments_are_refused(bench):
    with pytest.raises(SystemExit):
        bench.parse_args(["--budget", "30", "--first-top-k", "20"])
    with pytest.raises(SystemExit):
        bench.parse_args(["--validation-seed", "0"])


def row(text: str, name: str) -> list[str]:
    """A table row's cells, found by its method's name (bold where validation chose it)."""
    line = next(r for r in text.splitlines() if r.startswith((f"| {name} |", f"| **{name}** |")))
    return [c.strip() for c in line.strip("|").split("|")]


def test_a_whole_run_prints_every_row_and_records_its_inputs(bench, saved_minilm_models, tmp_path, capsys):
    models = tmp_path / "models"
    for kind in ("labeler", "filter"):
        (models / kind).mkdir(parents=True)
        (models / kind / "best").symlink_to(saved_minilm_models / kind)
    out = tmp_path / "report.md"
    argv = [
        "--models",
        str(models),
        "--work-dir",
        str(tmp_path / "work"),
        "--questions",
        "12",
        "--budget",
        "4",
        "--first-top-k",
        "8",
        "--resamples",
        "200",
        "--out",
        str(out),
    ]
    assert bench.main([*argv, "--time-sample", "4"]) == 0
    first = out.read_text()
    names = [
        "Direct-R",
        "Labeler rerank N=8, K=4",
        "loop, quickstart setting",
        "loop, rerank (raw)",
        "loop, rerank (calibrated)",
        "loop, rerank (calibrated, with rank)",
        "its first hop alone: the Labeler fused with the search's rank, K=4",
    ]
    rows = {name: row(first, name) for name in names}
    assert all(cells[4] != "not timed" for name, cells in rows.items() if not name.startswith("its"))
    assert "| validation | 0 |" in first and "| report | 0 |" in first and "gold chunks gained" in first
    assert "chosen: **" in first
    # The rerank loops keep K = 4 chunks a question, and score at least the reranker's N pairs.
    for name in names[3:6]:
        assert rows[name][2] == "4.00" and float(rows[name][3]) >= 8.0
    assert capsys.readouterr().out.strip() == first.strip()
    assert bench.main([*argv, "--time-sample", "0"]) == 0  # a rerun reads its cached runs back
    again = out.read_text()
    for name in names:
        assert row(again, name)[:4] == rows[name][:4]
    assert row(again, "loop, rerank (raw)")[4] == "not timed"
