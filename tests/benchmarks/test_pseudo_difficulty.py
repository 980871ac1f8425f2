"""benchmarks/pseudo_difficulty.py: candidates scored again on the questions the search misses."""

import json

BENCHMARK = "pseudo_difficulty"  # the conftest fixture `bench` imports it


def write_candidate(root, name, settings, records, set_name="pseudo-validation"):
    folder = root / name / "fp0123" / set_name
    folder.mkdir(parents=True)
    run = {"fingerprint": {"settings": {"efficientrag": {"top_k": 2, "first_top_k": None} | settings}}}
    (folder / "run.json").write_text(json.dumps(run))
    with (folder / "predictions.jsonl").open("w") as fh:
        for qid, gold, first_hop, kept in records:
            trace = {"hops": [{"hits": [[{"id": h} for h in first_hop]]}]}
            fh.write(
                json.dumps({"id": qid, "gold_chunk_ids": gold, "retrieved_ids": kept, "trace": trace}) + "\n"
            )


def tree(root):
    # The search's order: q1's gold at ranks 1-2 (easy at k=2), q2's second gold at rank 4 (hard).
    order = {"q1": ["a", "b", "x", "y"], "q2": ["c", "x", "y", "d"]}
    wide = [("q1", ["a", "b"], order["q1"], ["a", "b"]), ("q2", ["c", "d"], order["q2"], ["c", "d"])]
    narrow = [
        ("q1", ["a", "b"], order["q1"][:2], ["a", "b"]),
        ("q2", ["c", "d"], order["q2"][:2], ["c", "x"]),
    ]
    # A reranked first hop puts d first: its order must not be taken for the search's.
    reranked = [
        ("q1", ["a", "b"], ["x", "y", "a", "b"], ["a"]),
        ("q2", ["c", "d"], ["d", "c", "x", "y"], ["d"]),
    ]
    write_candidate(root, "wide", {"first_top_k": 4}, wide)
    write_candidate(root, "narrow", {}, narrow)
    write_candidate(root, "ce", {"first_top_k": 8, "first_hop_reranker_digest": "abc"}, reranked)


def test_hard_questions_are_those_whose_gold_the_search_ranks_low(bench, tmp_path, capsys):
    tree(tmp_path)
    assert bench.main([str(tmp_path), "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert "pseudo-validation: 2 questions, 1 with gold outside the question's top 2 (hard)" in out
    assert "| narrow | 75.0 / 50.0 (2.00) | 50.0 / 0.0 (2.00) | 100.0 / 100.0 (2.00) |" in out
    assert "| wide | 100.0 / 100.0 (2.00) | 100.0 / 100.0 (2.00) | 100.0 / 100.0 (2.00) |" in out
    assert "| ce | 50.0 / 0.0 (1.00) | 50.0 / 0.0 (1.00) | 50.0 / 0.0 (1.00) |" in out
    # At k=4 the search holds every gold chunk: nothing is hard.
    assert bench.main([str(tmp_path), "--k", "4"]) == 0
    assert "0 with gold outside the question's top 4" in capsys.readouterr().out


def test_a_folder_without_choice_runs_is_named(bench, tmp_path, capsys):
    assert bench.main([str(tmp_path)]) == 2
    assert (
        f"{tmp_path}: no <candidate>/<fingerprint>/pseudo-validation/predictions.jsonl"
        in capsys.readouterr().err
    )
    write_candidate(
        tmp_path, "ce", {"first_top_k": 8, "first_hop_reranker_digest": "abc"}, [("q", ["a"], ["a"], ["a"])]
    )
    assert bench.main([str(tmp_path)]) == 2
    assert "no candidate without a first-hop reranker" in capsys.readouterr().err
