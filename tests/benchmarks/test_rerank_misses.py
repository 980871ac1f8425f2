"""Where the loop's missed gold sits in the search's own ranking (benchmarks/rerank_misses.py)."""

import json

import pytest

BENCHMARK = "rerank_misses"  # the conftest fixture `bench` imports it


def _hit(cid, tag=None, prob=None):
    hit = {"id": cid, "score": 1.0, "seen": tag is None}
    return hit | ({"tag": tag, "continue_prob": prob} if tag else {})


def _loop_record():
    # Gold: "kept" (kept), "sure" (top 10, Terminate at 0.01), "unsure" (top 10, Terminate at 0.3
    # once and 0.02 once: its best is 0.3), "cut" (beyond, Continue then cut), "far" (beyond, never
    # retrieved by a hop).
    return {
        "id": "q1",
        "gold_chunk_ids": ["kept", "sure", "unsure", "cut", "far"],
        "retrieved_ids": ["kept", "x"],
        "trace": {
            "hops": [
                {"hits": [[_hit("kept", "continue", 0.9), _hit("sure", "terminate", 0.01), _hit("unsure", "terminate", 0.3)]]},
                {"hits": [[_hit("unsure", "terminate", 0.02), _hit("cut", "continue", 0.8), _hit("sure")]]},
            ]
        },
    }  # fmt: skip


def _direct():
    ranked = ["kept", "a", "sure", "b", "c", "unsure", "d", "e", "f", "g", "cut", "far"]
    return {"q1": {"id": "q1", "retrieved_ids": ranked}}


def test_each_missed_gold_is_placed_by_the_search_rank_and_its_fate(bench):
    counts = bench.count_misses([_loop_record()], _direct(), k=10)
    inside, beyond = bench.PLACES
    assert counts[inside, "tagged_terminate"] == 2
    assert counts[inside, "sure_terminate"] == 1  # "unsure" had 0.3 at its best
    assert counts[beyond, "over_budget"] == 1
    assert counts[beyond, "never_retrieved"] == 1
    assert counts[inside, "over_budget"] == counts[inside, "never_retrieved"] == 0
    assert counts["direct", "missed"] == 2  # "cut" and "far" are ranked 11th and 12th
    # A wider cut-off moves them inside.
    wide = bench.count_misses([_loop_record()], _direct(), k=12)
    assert wide[beyond, "over_budget"] == 0 and wide[inside, "over_budget"] == 1
    assert wide["direct", "missed"] == 0


def test_a_question_without_direct_r_or_with_too_short_a_ranking_is_refused(bench):
    with pytest.raises(ValueError, match="'q1' of the loop's run has no Direct-R record"):
        bench.count_misses([_loop_record()], {}, k=10)
    with pytest.raises(ValueError, match="fewer than 20 chunks"):
        bench.count_misses([_loop_record()], _direct(), k=20)


def test_the_script_prints_the_table_and_its_command(bench, tmp_path, capsys):
    loop, direct = tmp_path / "loop", tmp_path / "direct"
    loop.mkdir(), direct.mkdir()
    (loop / "predictions.jsonl").write_text(json.dumps(_loop_record()) + "\n", encoding="utf-8")
    (direct / "predictions.jsonl").write_text(json.dumps(_direct()["q1"]) + "\n", encoding="utf-8")
    assert bench.main(["--loop", str(loop), "--direct", str(direct)]) == 0
    out = capsys.readouterr().out
    assert "on 1 questions" in out and "Direct-R@10 misses 2" in out
    assert "| in the search's top 10 | 2 | 2 (1) | 0 | 0 |" in out
    assert "| beyond the search's top 10 | 2 | 0 (0) | 1 | 1 |" in out
    assert "Command: `python benchmarks/rerank_misses.py" in out
