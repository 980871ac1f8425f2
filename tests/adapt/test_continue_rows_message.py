"""The refusal of self-training rows with too few Continue rows reads as one grammatical sentence
set that says what happened and what to do (issue 48: "found 30 Continue rows ... (a corpus
without title links backs none)" contradicted itself and named no way on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from efficientrag.adapt.config import AdaptConfig
from efficientrag.adapt.job import _enough_continue_rows
from efficientrag.adapt.self_training import SelfTrainConfig

DECISIONS = Path("runs/adapt/decisions-abc/decisions.jsonl")


def refusal(agreement: str, rows: int) -> str:
    cfg = AdaptConfig(self_train=SelfTrainConfig(agreement=agreement))
    with pytest.raises(ValueError) as err:
        _enough_continue_rows(cfg, DECISIONS, {"continue_rows": rows})
    return str(err.value)


def test_too_few_linked_rows_say_why_and_what_to_do():
    assert refusal("links", 30) == (
        f"self-training found 30 Continue rows in {DECISIONS}, fewer than the "
        "self_train.min_continue_rows=50 it needs: a confident Continue pair becomes a row only where "
        "the corpus's title links back it, and few did (in a corpus whose chunks never name each "
        "other's titles, none can). Fine-tuning on (almost) only Terminate rows would teach the models "
        "to stop early, so nothing was fine-tuned. To go on: set self_train.agreement=none, lower "
        "self_train.continue_threshold or self_train.min_continue_rows, or adapt from the corpus alone "
        "(drop --questions)"
    )


def test_too_few_confident_rows_without_links_name_the_threshold():
    message = refusal("none", 0)
    assert message.startswith(f"self-training found 0 Continue rows in {DECISIONS}, fewer than the ")
    assert ": few pairs reached self_train.continue_threshold=0.3. Fine-tuning on" in message
    assert "title links" not in message


def test_enough_rows_pass():
    _enough_continue_rows(AdaptConfig(), DECISIONS, {"continue_rows": 50})
