"""A request's loop settings: allow-listed, capped by the server and checked by the loop's own config,
each refusal naming the setting (here: the wider first hop, ``first_top_k``)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")

from efficientrag.pipeline.config import EfficientRAGConfig  # noqa: E402
from efficientrag.serve.config import ALLOWED_SETTINGS, ServeConfig  # noqa: E402
from efficientrag.serve.errors import RequestError  # noqa: E402
from efficientrag.serve.requests import LoopSettings, exit_head_problem, settings_config  # noqa: E402


def test_a_request_may_widen_the_first_hop_within_the_servers_cap():
    base = EfficientRAGConfig(top_k=6)
    key, cfg = settings_config(base, {"first_top_k": 20, "top_k": None}, ServeConfig(max_top_k=50))
    assert "first_top_k" in ALLOWED_SETTINGS and "first_top_k" in LoopSettings.model_fields
    assert key == (("first_top_k", 20),) and cfg.first_hop_k == 20 and cfg.top_k == 6
    with pytest.raises(RequestError) as over:
        settings_config(base, {"first_top_k": 51}, ServeConfig(max_top_k=50))
    assert (over.value.status, over.value.field) == (422, "settings.first_top_k")
    with pytest.raises(RequestError) as floor:
        settings_config(base, {"first_top_k": 3, "floor_k": 4}, ServeConfig())
    assert floor.value.field == "settings" and "first_top_k=3" in str(floor.value)


def test_the_request_settings_are_the_configs_own_declared_once():
    """Each allowed setting has the config's type and description, and its range is the config's,
    checked once, the refusal naming the setting."""
    import typing

    from efficientrag.config_values import attribute_docs

    hints = typing.get_type_hints(EfficientRAGConfig)
    docs = attribute_docs(EfficientRAGConfig)
    for name in ALLOWED_SETTINGS:
        field = LoopSettings.model_fields[name]
        assert field.annotation == (hints[name] | None) and field.default is None, name
        assert field.description == docs[name] and field.description, name
    base = EfficientRAGConfig(top_k=6)
    for name, bad in [("tag_threshold", 1.5), ("max_branches", 0), ("top_k", 0), ("rank_weight", -0.1)]:
        with pytest.raises(RequestError) as refused:
            settings_config(base, {name: bad}, ServeConfig())
        assert (refused.value.status, refused.value.field) == (422, f"settings.{name}"), refused.value
    # The model refuses a wrong type before the config is built (strict: no "5" for 5).
    with pytest.raises(ValueError, match="top_k"):
        LoopSettings.model_validate({"top_k": "5"})


def test_an_exit_threshold_needs_a_labeler_that_can_exit_early(tmp_path):
    from efficientrag.models import Labeler
    from efficientrag.testing.scripted_models import USEFUL_WORDS, ScriptedLabeler
    from efficientrag.testing.tiny_backbones import tiny_bert
    from efficientrag.testing.token_tasks import labeler_rows, sentences
    from efficientrag.training.exit_head import ExitHeadConfig, fit_exit_head

    assert exit_head_problem(ScriptedLabeler(USEFUL_WORDS)) == "this server's Labeler has no early exit"
    backbone = tiny_bert(tmp_path / "bert", sentences(100))
    Labeler.from_backbone(str(backbone), max_length=32, device="cpu").save_pretrained(tmp_path / "labeler")
    labeler = Labeler.from_pretrained(tmp_path / "labeler", device="cpu")
    assert "no early-exit heads" in exit_head_problem(labeler)
    fit_exit_head(labeler, labeler_rows(8), ExitHeadConfig(layers=[1], epochs=1))
    assert exit_head_problem(labeler) is None
