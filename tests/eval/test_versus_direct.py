"""EfficientRAG against Direct-R's curve: interpolation, the two verdicts, the gold-chunk fates."""

from __future__ import annotations

import json

import pytest

from efficientrag.eval import versus_direct
from efficientrag.eval.chunk_curve import curve_from_ranked, value_at
from efficientrag.eval.gold_fate import FATE_HEADERS, count_fates, fate_cells, fate_of_record, gold_fate


def _direct(points: dict[int, tuple[float, float, float]]) -> dict:
    return {
        "retrieval": {
            str(k): {"n": 10, "recall": r, "all_gold": a, "answer_recall": ans, "num_chunks": float(k)}
            for k, (r, a, ans) in points.items()
        }
    }


def _ours(k: float, recall: float, all_gold: float, answer: float) -> dict:
    return {
        "retrieval": {
            "all": {"n": 10, "recall": recall, "all_gold": all_gold, "answer_recall": answer, "num_chunks": k}
        }
    }


DIRECT = _direct(
    {2: (40.0, 10.0, 35.0), 4: (60.0, 30.0, 50.0), 6: (70.0, 40.0, 60.0), 10: (80.0, 60.0, 70.0)}
)


def test_value_at_interpolates_between_cutoffs_and_refuses_to_extrapolate():
    curve = curve_from_ranked(DIRECT["retrieval"], "recall")
    assert curve == {2.0: 40.0, 4.0: 60.0, 6.0: 70.0, 10.0: 80.0}
    assert value_at(curve, 4) == 60.0
    assert value_at(curve, 5) == pytest.approx(65.0)
    assert value_at(curve, 8) == pytest.approx(75.0)
    assert value_at(curve, 10) == 80.0
    with pytest.raises(ValueError, match="outside"):
        value_at(curve, 1.5)
    with pytest.raises(ValueError, match="outside"):
        value_at(curve, 11)
    with pytest.raises(ValueError, match="empty"):
        value_at({}, 3)


def test_above_the_curve_is_judged_at_the_same_chunk_count():
    # 5 chunks: the curve gives 65 / 35 there. Recall 66 and all-gold 36 beat it, though both are
    # far below Direct-R@10.
    v = versus_direct.versus(DIRECT, _ours(5.0, 66.0, 36.0, 50.0))
    assert v.direct_same_k["recall"] == pytest.approx(65.0)
    assert v.direct_same_k["all_gold"] == pytest.approx(35.0)
    assert v.direct_same_k["answer_recall"] == pytest.approx(55.0)
    assert v.above_curve
    assert not v.replaces_top10 and not v.all_gold_of_top10
    # One metric under the curve is enough to fail.
    assert not versus_direct.versus(DIRECT, _ours(5.0, 66.0, 34.0, 90.0)).above_curve


def test_replacing_top10_needs_both_metrics_and_at_most_seven_chunks():
    assert versus_direct.versus(DIRECT, _ours(6.5, 81.0, 61.0, 0.0)).replaces_top10
    only_gold = versus_direct.versus(DIRECT, _ours(6.5, 79.0, 61.0, 0.0))
    assert not only_gold.replaces_top10 and only_gold.all_gold_of_top10
    too_many = versus_direct.versus(DIRECT, _ours(7.5, 85.0, 70.0, 0.0))
    assert not too_many.replaces_top10 and not too_many.all_gold_of_top10


def test_table_rows_carry_the_curve_the_point_and_both_verdicts(tmp_path):
    lines = versus_direct.table(
        [("hotpotqa", "own pool", DIRECT, _ours(5.0, 66.0, 36.0, 50.0))], [2, 4, 6, 10]
    )
    header, rule, row = lines
    assert header.count("|") == rule.count("|") == row.count("|")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["hotpotqa", "own pool", "10"]
    assert cells[3] == "40.0 / 60.0 / 70.0 / 80.0"
    assert cells[5] == "35.0 / 50.0 / 60.0 / 70.0"
    assert cells[6] == "5.00"
    assert cells[7:10] == ["**66.00**", "**36.00**", "**50.00**"]
    assert cells[10] == "65.0 / 35.0 / 55.0"
    assert cells[11:] == ["yes", "no"]
    png = versus_direct.plot(DIRECT, _ours(5.0, 66.0, 36.0, 50.0), tmp_path / "p.png", title="t")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _hit(cid: str, tag: str | None) -> dict:
    return {"id": cid, "score": 1.0, "seen": tag is None, **({"tag": tag} if tag else {})}


def test_gold_fate_separates_terminate_budget_and_never_retrieved(tmp_path):
    rec = {
        "id": "q1",
        "gold_chunk_ids": ["kept", "term", "cut", "never", "late"],
        "retrieved_ids": ["kept", "x"],
        "trace": {
            "hops": [
                {"hits": [[_hit("kept", "continue"), _hit("term", "terminate"), _hit("cut", "continue")]]},
                # "term" comes back already seen (no new tag); "late" is tagged Continue at hop 2
                # and still cut.
                {"hits": [[_hit("term", None)], [_hit("late", "terminate"), _hit("late", "continue")]]},
            ]
        },
    }
    assert fate_of_record(rec) == {
        "kept": "kept",
        "term": "tagged_terminate",
        "cut": "over_budget",
        "never": "never_retrieved",
        "late": "over_budget",
    }
    counts = count_fates([rec, {**rec, "id": "q2", "gold_chunk_ids": ["never"]}])
    assert counts == {"gold": 6, "kept": 1, "tagged_terminate": 1, "over_budget": 2, "never_retrieved": 2}
    assert len(fate_cells(counts)) == len(FATE_HEADERS)
    assert fate_cells(counts)[3] == "2 (33.3%)"
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(rec) + "\n\n", encoding="utf-8")
    assert gold_fate(path)["over_budget"] == 2


def test_gold_fate_names_the_file_and_record_without_a_trace(tmp_path):
    path = tmp_path / "predictions.jsonl"
    path.write_text(
        json.dumps({"id": "q9", "gold_chunk_ids": [], "retrieved_ids": []}) + "\n", encoding="utf-8"
    )
    with pytest.raises(ValueError, match=r"predictions\.jsonl:1 \(id 'q9'\).*trace\.hops"):
        gold_fate(path)


def test_a_chunk_count_outside_the_curve_is_never_above_it():
    v = versus_direct.versus(DIRECT, _ours(1.5, 99.0, 99.0, 99.0))
    assert v.direct_same_k == {} and not v.above_curve
    row = versus_direct.table([("d", "p", DIRECT, _ours(1.5, 99.0, 99.0, 99.0))], [2, 4, 6, 10])[2]
    assert "outside the curve" in row
