"""The speed benchmark's variant names map onto the overrides they promise."""

import pytest

BENCHMARK = "labeler_speed"  # the conftest fixture `bench` imports it


BASE = ["query_mode=branch", "top_k=10", "floor_k=3", "labeler_max_length=256"]


def test_float_keeps_the_setting_and_modes_add_quantize(bench):
    plans = bench.variants(["float", "int8", "bf16", "onnx-int8"], BASE)
    assert plans["float"] == BASE
    assert plans["int8"] == [*BASE, "quantize=int8"]
    assert plans["bf16"] == [*BASE, "quantize=bf16"]
    assert plans["onnx-int8"] == [*BASE, "quantize=onnx-int8"]


def test_top_and_len_suffixes_replace_their_keys_and_shrink_the_floor(bench):
    plan = bench.variants(["onnx-int8+top2+len128"], BASE)["onnx-int8+top2+len128"]
    assert "top_k=2" in plan and "top_k=10" not in plan
    assert "floor_k=2" in plan and "floor_k=3" not in plan
    assert "labeler_max_length=128" in plan and "labeler_max_length=256" not in plan
    assert "quantize=onnx-int8" in plan


@pytest.mark.parametrize("name", ["fp16", "int8+top", "onnx+len", "int8+fast"])
def test_unknown_variants_are_refused_by_name(bench, name):
    with pytest.raises(SystemExit, match="unknown variant"):
        bench.variants([name], BASE)
