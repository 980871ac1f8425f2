"""The TreeHop benchmark's reading of results: gains at equal chunk count, EfficientRAG's row."""

import json
import math

import pytest

BENCHMARK = "retrieval_treehop"  # the conftest fixture `bench` imports it


def _agg(recall, all_gold, k):
    return {"recall": recall, "all_gold": all_gold, "answer_recall": recall, "num_chunks": k, "n": 10}


DIRECT = {"retrieval": {"5": _agg(50.0, 20.0, 5), "10": _agg(60.0, 40.0, 10), "20": _agg(70.0, 50.0, 20)}}


def test_gain_reads_direct_r_at_the_same_chunk_count(bench):
    ours = {"retrieval": {"all": _agg(66.0, 33.0, 7.5)}}
    g = bench.gain(ours, DIRECT)
    # Direct-R at 7.5 chunks: halfway between @5 and @10 -> 55.0 recall, 30.0 all-gold.
    assert g["recall"] == pytest.approx(11.0) and g["all_gold"] == pytest.approx(3.0)
    outside = bench.gain({"retrieval": {"all": _agg(90.0, 80.0, 25.0)}}, DIRECT)
    assert math.isnan(outside["recall"])


def test_efficientrag_row_is_the_chosen_setting_on_the_pool_asked_for(bench, tmp_path):
    folder = tmp_path / "models" / "hotpotqa+musique"
    folder.mkdir(parents=True)
    row = {"direct": {}, "efficientrag": {"retrieval": {"all": _agg(80.0, 60.0, 6.0)}}, "fate": {}}
    results = {
        "setting": ["k10-t0.05-f3-tok0.7", ["top_k=10"]],
        "results": {
            "2wikimultihopqa": {
                "own pool, chosen + floor_k=0 (not chosen; diagnostic)": {"efficientrag": "diagnostic"},
                "own pool": row,
                "combined pool (7108)": {"efficientrag": "combined"},
            }
        },
    }
    (folder / "results-2wikimultihopqa.json").write_text(json.dumps(results))
    got = bench.efficientrag_result(
        tmp_path, ["hotpotqa", "musique"], ["2wikimultihopqa"], "2wikimultihopqa", "own pool"
    )
    assert got["setting"] == "k10-t0.05-f3-tok0.7" and got["efficientrag"] == row["efficientrag"]
    combined = bench.efficientrag_result(
        tmp_path, ["hotpotqa", "musique"], ["2wikimultihopqa"], "2wikimultihopqa", "combined pool"
    )
    assert combined["efficientrag"] == "combined"
    assert bench.efficientrag_result(tmp_path, ["hotpotqa"], ["musique"], "musique", "own pool") == {}


def test_setting_labels_make_distinct_folder_names(bench):
    slugs = {bench.slug(label) for label in bench.SETTINGS}
    assert len(slugs) == len(bench.SETTINGS) and all("/" not in s and " " not in s for s in slugs)


def test_no_combination_without_the_labeler_its_protocol_trained(bench, tmp_path):
    got = bench.choose_combination(None, tmp_path, ["hotpotqa", "musique"], None, "fp", {})
    assert got == (None, None, None, None)
