"""A setting added after runs were fingerprinted is declared so on its own field, and fingerprints
leave it out at its default: runs recorded before it existed keep their fingerprints."""

from dataclasses import dataclass

from efficientrag.config_values import fingerprinted
from efficientrag.experiment.run_binding import loop_fingerprint
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.setting_fields import quiet_at_default


@dataclass
class Settings:
    old: int = 3
    new: float = quiet_at_default(0.0)


def test_a_quiet_setting_is_named_only_away_from_its_default():
    assert fingerprinted(Settings()) == {"old": 3}
    assert fingerprinted(Settings(new=0.5)) == {"old": 3, "new": 0.5}
    assert fingerprinted(Settings(old=4)) == {"old": 4}  # an ordinary setting is always named


def test_the_loops_later_settings_leave_its_fingerprint_as_it_was():
    plain = loop_fingerprint(EfficientRAGConfig(), answers=False)
    for later in ("fill_from", "rank_weight", "hop_calibration", "pair_budget"):
        assert later not in plain
    changed = EfficientRAGConfig(pair_budget=12, chunk_budget=6, budget_policy="best", rank_weight=0.2)
    named = loop_fingerprint(changed, answers=False)
    assert named["pair_budget"] == 12 and named["rank_weight"] == 0.2
