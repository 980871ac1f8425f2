"""``adapt``'s exit threshold: heads fit for the kept Labeler (once per rows and settings), every
candidate threshold scored on the scoring sets, and the rule fixed before any run (the fewest
encoder layers within the tolerance of full depth, else full depth)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from efficientrag.adapt.choice import PSEUDO_GROUP
from efficientrag.adapt.exit_choice import (
    ExitChoiceConfig,
    _fit_half,
    choose_exit,
    layer_cost,
    pick_threshold,
)
from efficientrag.jsonl import read_jsonl
from efficientrag.models import Labeler
from efficientrag.models.early_exit import EARLY_EXIT_DIR
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.setting_fields import SettingError
from efficientrag.testing.scripted_models import bridge_corpus
from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import labeler_rows, sentences, write_rows
from efficientrag.training.exit_head import ExitHeadConfig


def test_the_threshold_running_fewest_layers_within_the_tolerance_is_chosen():
    rows = {
        None: {"score": 80.0, "layers": 240.0},
        0.01: {"score": 79.5, "layers": 180.0},
        0.05: {"score": 79.1, "layers": 150.0},  # within 1 point, fewest layers
        0.1: {"score": 78.0, "layers": 120.0},  # cheaper, but 2 points down
    }
    assert pick_threshold(rows, tolerance=1.0) == 0.05
    assert pick_threshold(rows, tolerance=0.1) is None  # nothing within: full depth
    assert pick_threshold(rows, tolerance=5.0) == 0.1


def _record(kept, hits, gold=("a",)):
    rows = [{"id": cid, "tag": "terminate", **extra} for cid, extra in hits]
    return {"retrieved_ids": kept, "gold_chunk_ids": list(gold), "trace": {"hops": [{"hits": [rows]}]}}


def test_layers_are_read_from_the_traces():
    full = [_record(["a"], [("a", {}), ("b", {}), ("c", {})])]
    early = [_record(["a"], [("a", {}), ("b", {"exited_at": 2}), ("c", {"exited_at": 4})])]
    assert layer_cost(full, depth=6) == 18.0
    assert layer_cost(early, depth=6) == 6 + 2 + 4


@dataclass
class _Set:
    name: str
    retriever: object
    group: str = PSEUDO_GROUP


class StubJudge:
    """Scores a threshold by a fixed table: the gold is lost past 0.1, and higher thresholds let
    more pairs leave at layer 1 (of 4). Its search keeps the bridge world's corpus."""

    progress = False

    def __init__(self) -> None:
        self.asked: list[float | None] = []
        self.sets = [_Set("pseudo-validation", SimpleNamespace(corpus=bridge_corpus()))]

    def records(self, models, cfg):
        t = cfg.exit_threshold
        self.asked.append(t)
        leaving = 0 if t is None else min(3, int(t * 30))
        out = []
        for q in range(12):
            hits = [("alpha", {})] + [
                (cid, {"exited_at": 1} if i < leaving else {}) for i, cid in enumerate(OTHERS)
            ]
            kept = ["alpha"] if t is None or t <= 0.1 else ["bob"]
            out.append({"id": f"q{q}", **_record(kept, hits, gold=("alpha",))})
            out[-1]["trace"]["hops"][0]["queries"] = [f"Who directed film {q}?"]
        return {"pseudo-validation": out}

    def __bool__(self) -> bool:
        return True


OTHERS = ("bob", "omega", "noise")


def test_heads_are_fit_once_and_the_chosen_threshold_is_set(tmp_path):
    backbone = tiny_deberta(tmp_path / "deberta", sentences(300), num_layers=4)
    torch.manual_seed(0)
    folder = Labeler.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(
        tmp_path / "labeler"
    )
    write_rows(tmp_path / "rows", labeler_rows(24, seed=1), labeler_rows(8, seed=2, prefix="v"))
    rows = tmp_path / "rows" / "train.jsonl"
    cfg = ExitChoiceConfig(
        enabled=True, thresholds=[0.05, 0.1, 0.2], heads=ExitHeadConfig(layers=[1], epochs=2)
    )
    models = {"labeler": Path(folder), "filter": Path(folder)}
    judge, work = StubJudge(), tmp_path / "work"
    chosen, record = choose_exit(judge, models, EfficientRAGConfig(), rows, cfg, work)
    # 0.05 and 0.1 keep the score; 0.1 lets more pairs leave (fewer layers); 0.2 loses the gold.
    assert chosen.exit_threshold == 0.1 and record["chosen"] == 0.1
    # The fit's full-depth run, then every candidate (a real Judge reads the second full-depth run
    # back from its run folder).
    assert judge.asked == [None, None, 0.05, 0.1, 0.2]
    assert record["candidates"]["None"]["layers"] == 16 and record["candidates"]["0.1"]["layers"] == 4 + 3 * 1
    # The heads saw the full-depth pairs of half the questions (4 pairs each), and were scored on the rest.
    fit_half = [f"q{q}" for q in range(12) if _fit_half({"id": f"q{q}"})]
    assert 0 < len(fit_half) < 12
    pairs = list(read_jsonl(work / "loop_pairs.jsonl"))
    assert {p["question_id"] for p in pairs} == set(fit_half) and len(pairs) == 4 * len(fit_half)
    assert record["heads"]["rows"] == 24 + len(pairs)
    weights = folder / EARLY_EXIT_DIR / "model.safetensors"
    written = weights.stat().st_mtime_ns
    choose_exit(StubJudge(), models, EfficientRAGConfig(), rows, cfg, work)  # the same rows and settings
    assert weights.stat().st_mtime_ns == written
    other = replace(cfg, heads=ExitHeadConfig(layers=[2], epochs=2))
    choose_exit(StubJudge(), models, EfficientRAGConfig(), rows, other, work)
    assert weights.stat().st_mtime_ns != written  # other settings: fit again


def test_thresholds_are_checked():
    with pytest.raises(SettingError, match="thresholds"):
        ExitChoiceConfig(thresholds=[0.0])
    with pytest.raises(SettingError, match="thresholds"):
        ExitChoiceConfig(thresholds=[])
