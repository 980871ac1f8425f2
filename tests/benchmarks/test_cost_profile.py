"""``cost_profile.py``: every stage of a question's time, the loop beside its one-hop reranker on the
same models, and a Labeler cut in depth replaying exactly the teacher's pairs."""

from __future__ import annotations

import re

import yaml

from efficientrag.data.toy_world import generate_toy_world
from efficientrag.models import Filter, Labeler
from efficientrag.testing.tiny_backbones import tiny_bert

BENCHMARK = "cost_profile"  # the conftest fixture `bench` imports it


def test_the_profile_splits_every_question_and_replays_the_same_pairs(bench, tmp_path, capsys):
    texts = [
        p["paragraph_text"] for r in generate_toy_world(seed=0, num_questions=20) for p in r["paragraphs"]
    ]
    backbone = tiny_bert(tmp_path / "bert", texts)
    models = tmp_path / "models"
    Labeler.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(
        models / "labeler" / "best"
    )
    Filter.from_backbone(str(backbone), max_length=64, device="cpu").save_pretrained(
        models / "filter" / "best"
    )
    preset = tmp_path / "toy.yaml"
    preset.write_text(
        yaml.safe_dump(
            {
                "work_dir": str(tmp_path / "work"),
                "data": {"dataset": "toy", "toy": {"seed": 0, "num_questions": 12}},
                "retriever": {"kind": "bm25"},
                # Random heads say Continue near 0.5: at 0.4 every hit opens a next hop.
                "efficientrag": {"top_k": 3, "max_hops": 2, "tag_threshold": 0.4, "query_mode": "merged"},
            }
        )
    )
    args = ["--models", str(models), "--config", str(preset), "--questions", "12", "--batch", "5"]
    args += ["--rerank-n", "5", "--budget", "3", "--dtypes", "float", "--student-layers", "1"]
    clock, results, teacher_of, _ = bench.profile(bench.parse_args(args))
    keys = list(results)
    assert keys == [
        ("loop", "float"),
        ("labeler_rerank", "float"),
        ("loop", "float, first 1 layers"),
        ("labeler_rerank", "float, first 1 layers"),
    ]
    for key in keys:
        stage = bench.stage_seconds(clock, key, teacher_of.get(key))
        parts = sum(stage[s] for s in bench.STAGES)
        assert abs(parts - stage["wall"]) < 1e-9 and min(stage[s] for s in bench.STAGES if s != "heads") >= 0
    # The cut Labeler ran exactly the teacher's inputs: the same tokens, the same padding.
    for student, teacher in teacher_of.items():
        assert clock.tokens[student] == clock.tokens[teacher] and clock.tokens[teacher][0] > 0
        assert clock.total(student, "layers") > 0 and clock.total(student, "filter") == 0.0
    reranked = results[("labeler_rerank", "float")]
    assert all(len(r.trace) == 1 and r.counters["labeler_pairs"] == 5 for r in reranked)
    assert clock.total(("labeler_rerank", "float"), "filter") == 0.0  # one hop: no Filter call
    assert any(len(r.trace) == 2 for r in results[("loop", "float")])

    assert bench.main(args) == 0
    table = capsys.readouterr().out
    rows = [
        line
        for line in table.splitlines()
        if line.startswith("| loop |") or line.startswith("| labeler_rerank |")
    ]
    assert len(rows) == 4
    cells = rows[1].split(" | ")
    assert cells[3].startswith("5.0 (5; 5.0)")
    assert re.search(r"python benchmarks/cost_profile.py --models \S+ --config", table)
