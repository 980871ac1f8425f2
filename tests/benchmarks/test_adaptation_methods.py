"""The adaptation benchmark's page on adapt's retrieval method choice: what each group of scoring
sets alone would have chosen, every candidate on dev with paired gaps against the one-hop reranker,
and each candidate's settings read back as adapt recorded them."""

from dataclasses import replace

import pytest

from efficientrag.config_values import to_dict
from efficientrag.pipeline.config import EfficientRAGConfig

BENCHMARK = "adaptation_methods"  # the conftest fixture `bench` imports it


def _set(recall, gold, k=4.0, pairs=20.0):
    return {"n": 10.0, "recall": recall, "all_gold": gold, "num_chunks": k, "labeler_pairs": pairs}


LOOP = EfficientRAGConfig(top_k=6, chunk_budget=7, budget_policy="best", floor_k=3)
RERANK = replace(LOOP, budget_policy="rerank", first_top_k=20, floor_k=0, max_hops=1)
CALIBRATED = replace(RERANK, max_hops=4, hop_calibration=[[0.5, -1.0, -0.3], [0.4, -2.0, -0.2]])
METHOD = {
    "chosen": "loop",
    "chunk_budget": 7,
    "rerank_top_k": 20,
    "groups": {"pseudo-validation": "pseudo", "hotpotqa": "validation"},
    "by_group": {"pseudo": "loop", "validation": "labeler_rerank"},
    "candidates": {
        "labeler_rerank": {
            "score": 60.0,
            "sets": {"pseudo-validation": _set(60, 40), "hotpotqa": _set(90, 80)},
            "efficientrag": to_dict(RERANK),
        },
        "loop": {
            "score": 70.0,
            "sets": {"pseudo-validation": _set(95, 90, 6.5, 30), "hotpotqa": _set(85, 70)},
            "efficientrag": to_dict(LOOP),
        },
        "loop_rerank_calibrated": {
            "score": 65.0,
            "sets": {"pseudo-validation": _set(80, 60), "hotpotqa": _set(88, 77)},
            "efficientrag": to_dict(CALIBRATED),
        },
    },
    "notes": {"loop_rerank": "left out here"},
}


def test_the_choice_says_what_each_group_alone_would_have_chosen(bench):
    text = "\n".join(bench.choice_lines(METHOD))
    assert "| **loop** | 95.0 / 90.0 / 6.50 / 30.0 | 85.0 / 70.0 / 4.00 / 20.0 | 70.00 |" in text
    assert (
        "Chosen on every set: `loop`; on the target's pseudo-questions alone: `loop`; on the source" in text
    )
    assert "validation alone: `labeler_rerank`" in text
    assert "`loop_rerank`: left out here." in text


def test_each_candidates_settings_are_read_back_as_recorded(bench):
    settings = bench.dev_settings(METHOD)
    assert settings["loop"] == LOOP and settings["labeler_rerank"] == RERANK
    assert settings["loop_rerank_calibrated"].hop_calibration == CALIBRATED.hop_calibration


def _records(hits_per_question):
    return [
        {
            "id": f"q{i}",
            "gold_chunk_ids": ["g1", "g2"],
            "retrieved_ids": hits,
            "counters": {"labeler_pairs": 20.0},
            "trace": {
                "hops": [{"timings_s": {"retrieval": 0.01, "encode": 0.004, "search": 0.006, "labeler": 0.1}}]
            },
        }
        for i, hits in enumerate(hits_per_question)
    ]


def test_dev_rows_pair_every_candidate_with_the_reranker_and_the_search(bench):
    n = 40
    runs = {
        "labeler_rerank": _records([["g1", "x"]] * n),
        "loop": _records([["g1", "g2"]] * n),  # every question gains its second gold chunk
        "loop_rerank": _records([["g1", "x"]] * (n - 1) + [["g1", "g2"]]),  # one question: a tie
    }
    secs = {k: bench.seconds_per_question(v) for k, v in runs.items()}
    # encode and search are parts of retrieval: not counted twice.
    assert secs["loop"] == pytest.approx(0.11)
    # The search ranks g2 eleventh: its top 10 holds g1 alone (50.0 / 0.0).
    search = _records([["x"] * 9 + ["g1", "g2"]] * n)
    lines = bench.dev_lines(runs, "loop", secs, search, resamples=2000)
    # q1, q3, q4, q10, q13, q20, q22, q28, q37, q38 and q39 are held back from design (by id hash).
    assert "held back (11 q): recall | all-gold |" in lines[0]
    loop = next(line for line in lines if line.startswith("| loop (chosen)"))
    gain = "+50.0 [+50.0, +50.0] above | +100.0 [+100.0, +100.0] above"
    assert f"| 100.0 / 100.0 | 2.00 | 20.0 | 0.110 | {gain} | {gain} |" in loop
    tie = next(line for line in lines if line.startswith("| loop_rerank |"))
    # Its one gain is q39's, held back: 1 question of 40 on the whole, 1 of 11 on the held-back part.
    assert "tie | +2.5 [+0.0, +7.5] tie | +4.5 [+0.0, " in tie and tie.endswith("tie |")
    against_search = lines[lines.index("Against the search's own top 10 (50.0 / 0.0 at 10 chunks):") :]
    assert f"| loop | {gain} | {gain} |" in against_search
    assert "| labeler_rerank | +0.0 [+0.0, +0.0] tie | +0.0 [+0.0, +0.0] tie |" in "\n".join(against_search)
    runs["loop"] = runs["loop"][1:]
    with pytest.raises(ValueError, match="loop: its dev run holds other questions"):
        bench.dev_lines(runs, "loop", secs)
    runs["loop"] = _records([["g1", "g2"]] * n)
    with pytest.raises(ValueError, match="search top 10: its dev run holds other questions"):
        bench.dev_lines(runs, "loop", secs, search[1:])


def test_no_choice_gives_no_section(bench, tmp_path):
    assert bench.method_lines({"method": {"chosen": "loop", "compared": False}}, None, [], tmp_path) == []
