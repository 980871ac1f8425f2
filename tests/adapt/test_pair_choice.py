"""``adapt``'s Labeler pairs: the chosen method's cheaper variants (narrower later hops, a pair cap)
scored on the scoring sets, and the rule fixed before any run (the fewest pairs within the tolerance
of the best score)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from efficientrag.adapt.choice import PSEUDO_GROUP
from efficientrag.adapt.pair_choice import (
    AS_CHOSEN,
    PairChoiceConfig,
    choose_pairs,
    pair_candidates,
    pick_fewest_pairs,
)
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.setting_fields import SettingError

LOOP = EfficientRAGConfig(top_k=10)


def test_the_candidates_judge_fewer_pairs_and_keep_the_first_hop():
    got = pair_candidates(LOOP, PairChoiceConfig(widths=[12, 6, 4], budgets=[40, 25, 8]))
    assert list(got) == [
        AS_CHOSEN,
        "later hops top 6",
        "later hops top 4",
        "pair budget 40",
        "pair budget 25",
    ]
    assert got[AS_CHOSEN] is LOOP
    narrow = got["later hops top 4"]
    assert (narrow.first_hop_k, narrow.top_k, narrow.first_hop_judged) == (10, 4, 10)
    assert got["pair budget 25"].pair_budget == 25 and got["pair budget 25"].top_k == 10
    # A cap under the first hop's own 10 pairs cannot hold: left out (the config would refuse it).
    assert "pair budget 8" not in got


def test_a_one_hop_method_or_a_capped_one_has_fewer_or_no_candidates():
    assert list(pair_candidates(replace(LOOP, max_hops=1), PairChoiceConfig())) == [AS_CHOSEN]
    capped = replace(LOOP, pair_budget=28)
    assert list(pair_candidates(capped, PairChoiceConfig(widths=[], budgets=[30, 25]))) == [
        AS_CHOSEN,
        "pair budget 25",
    ]
    # With a cross-encoder before the Labeler, top_k is the first hop's width too: no width candidate.
    ce = replace(LOOP, first_hop_reranker="some/cross-encoder", first_top_k=20, top_k=6)
    assert [n for n in pair_candidates(ce, PairChoiceConfig(widths=[4])) if n.startswith("later")] == []


def test_the_fewest_pairs_within_the_tolerance_of_the_best_is_picked():
    rows = {
        AS_CHOSEN: {"score": 80.0, "pairs": 40.0},
        "later hops top 6": {"score": 79.5, "pairs": 28.0},
        "later hops top 4": {"score": 78.0, "pairs": 20.0},  # cheaper, 2 points down
        "pair budget 30": {"score": 79.2, "pairs": 28.0},  # as cheap, lower score
    }
    assert pick_fewest_pairs(rows, 1.0) == "later hops top 6"
    assert pick_fewest_pairs(rows, 0.1) == AS_CHOSEN
    assert pick_fewest_pairs(rows, 5.0) == "later hops top 4"
    # The best need not be the chosen method as it is: a cheaper candidate that scores higher wins.
    rows["pair budget 30"]["score"] = 81.0
    assert pick_fewest_pairs(rows, 0.5) == "pair budget 30"


def test_bad_settings_are_refused():
    with pytest.raises(SettingError, match="widths"):
        PairChoiceConfig(widths=[0])
    with pytest.raises(SettingError, match="budgets"):
        PairChoiceConfig(budgets=[2.5])
    with pytest.raises(SettingError, match="tolerance"):
        PairChoiceConfig(tolerance=-1.0)


@dataclass
class _Set:
    name: str
    group: str = PSEUDO_GROUP


class StubJudge:
    """A world where the second gold chunk sits at a later hop's rank 5: a later hop must judge at
    least 5 hits to find it, and a question pays the first hop's 10 pairs plus each later hop's."""

    progress = False

    def __init__(self) -> None:
        self.sets = [_Set("pseudo-validation")]
        self.asked: list[EfficientRAGConfig] = []

    def records(self, models: Any, cfg: EfficientRAGConfig) -> dict[str, list[dict[str, Any]]]:
        self.asked.append(cfg)
        later = cfg.top_k
        pairs = min(cfg.first_hop_k + later, cfg.pair_budget or 10**6)
        found = later >= 5 and pairs - cfg.first_hop_k >= 5
        out = []
        for q in range(20):
            kept = [f"q{q}-a", *([f"q{q}-b"] if found or q % 4 == 0 else [])]
            out.append(
                {
                    "id": f"q{q}",
                    "gold_chunk_ids": [f"q{q}-a", f"q{q}-b"],
                    "retrieved_ids": kept,
                    "counters": {"labeler_pairs": float(pairs)},
                }
            )
        return {"pseudo-validation": out}

    def __bool__(self) -> bool:
        return True


def test_every_candidate_is_run_and_the_cheapest_that_keeps_the_score_is_set():
    judge = StubJudge()
    cfg = PairChoiceConfig(enabled=True, widths=[6, 4], budgets=[16, 13])
    chosen, record = choose_pairs(judge, {"labeler": Path("l"), "filter": Path("f")}, LOOP, cfg)
    assert [c.top_k for c in judge.asked] == [10, 6, 4, 10, 10]
    # Width 6 and a cap of 16 pairs still find the second gold chunk; width 4 and a cap of 13 do not.
    assert record["candidates"]["later hops top 6"]["pairs"] == 16.0
    assert record["candidates"]["pair budget 16"]["pairs"] == 16.0
    assert record["candidates"]["later hops top 4"]["score"] < record["candidates"][AS_CHOSEN]["score"] - 1
    assert record["chosen"] == "later hops top 6" and (chosen.top_k, chosen.first_top_k) == (6, 10)
    assert record["candidates"][AS_CHOSEN]["pairs"] == 20.0 and record["tolerance"] == 1.0


def test_a_one_hop_method_is_handed_back_unscored():
    judge = StubJudge()
    one_hop = replace(LOOP, max_hops=1)
    chosen, record = choose_pairs(judge, {}, one_hop, PairChoiceConfig(enabled=True))
    assert chosen is one_hop and record["chosen"] == AS_CHOSEN and judge.asked == []


def test_adapt_writes_the_picked_pairs_into_the_preset_it_hands_back(tmp_path, monkeypatch):
    from efficientrag.adapt import job
    from efficientrag.adapt.config import AdaptConfig

    monkeypatch.setattr(job, "choose_method", lambda judge, models, loop, cfg: (loop, {"chosen": "loop"}))
    cfg = AdaptConfig(work_dir=str(tmp_path), efficientrag=LOOP)
    cfg.pairs = PairChoiceConfig(enabled=True, widths=[6], budgets=[])
    record = job.method_stage(cfg, StubJudge(), {"labeler": Path("l"), "filter": Path("f")})
    assert record["pairs"]["chosen"] == "later hops top 6"
    preset = yaml.safe_load(Path(record["preset"]).read_text(encoding="utf-8"))
    assert preset["efficientrag"]["top_k"] == 6 and preset["efficientrag"]["first_top_k"] == 10
