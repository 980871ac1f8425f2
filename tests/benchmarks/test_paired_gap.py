"""Two runs paired question by question, with the gap's bootstrap interval (benchmarks/paired_gap.py)."""

import json

import pytest

BENCHMARK = "paired_gap"  # the conftest fixture `bench` imports it


def _scores(recall, all_gold, chunks):
    return {"recall": recall, "all_gold": all_gold, "answer_recall": all_gold, "num_chunks": chunks}


def _run(folder, records, *, index="idx1", data="data1"):
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"id": "x", "fingerprint": {"index": index, "data": data}}))
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


# Four MuSiQue-style questions: their ids say the hop count.
LOOP = {
    "2hop__a": (1.0, True, 7),
    "2hop__b": (0.5, False, 7),
    "3hop1__c": (1 / 3, False, 6),
    "3hop2__d": (1.0, True, 7),
}
DIRECT = {
    "2hop__a": (0.5, False),
    "2hop__b": (0.5, False),
    "3hop1__c": (2 / 3, False),
    "3hop2__d": (1.0, True),
}


@pytest.fixture()
def runs(tmp_path):
    loop = [{"id": q, "type": "", "retrieval": {"all": _scores(r, g, c)}} for q, (r, g, c) in LOOP.items()]
    direct = [
        {"id": q, "type": "", "retrieval": {"7": _scores(0.0, False, 7), "10": _scores(r, g, 10)}}
        for q, (r, g) in DIRECT.items()
    ]
    return _run(tmp_path / "loop", loop), _run(tmp_path / "direct_r_k", direct)


def test_a_pair_is_scored_overall_and_by_hop_count(bench, runs, capsys):
    loop, direct = runs
    assert bench.main(["--pair", "MuSiQue", str(loop), f"{direct}@10", "--resamples", "400"]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0].strip("| "): line for line in out.splitlines() if line.startswith("| ")}
    # All four: loop recall (1 + .5 + 1/3 + 1) / 4 = 70.8, all-gold 50.0; Direct-R@10 66.7 / 25.0.
    assert "| all | 4 | 6.75 / 10.00 | 70.8 / 50.0 | 66.7 / 25.0 | +4.2 [" in rows["all"]
    assert (
        "| 2hop | 2 | 7.00 / 10.00 | 75.0 / 50.0 | 50.0 / 0.0 | +25.0 [+0.0, +50.0] (100%) | +50.0 ["
        in rows["2hop"]
    )
    assert "| 3hop | 2 | 6.50 / 10.00 | 66.7 / 50.0 | 83.3 / 50.0 | -16.7 [-33.3, +0.0] (" in rows["3hop"]
    # Of the four, only 3hop2__d falls in the part held back from design (a hash of its id).
    assert (
        "| held back | 1 | 7.00 / 10.00 | 100.0 / 100.0 | 100.0 / 100.0 | +0.0 [+0.0, +0.0] (100%) |" in out
    )
    assert "`loop` (a) against `direct_r_k@10` (b)" in out
    assert out.startswith("Command: `python benchmarks/paired_gap.py --pair MuSiQue ")


def test_the_gap_reads_the_cut_off_asked_for(bench, runs):
    loop, direct = runs
    scores = bench.side_scores(bench.parse_side(f"{direct}@7"))
    assert {s["recall"] for s in scores.values()} == {0.0}
    assert bench.side_scores(bench.parse_side(f"{direct}@10"))["2hop__a"]["recall"] == 0.5


def test_types_come_from_the_distractor_file_for_untyped_questions(bench, tmp_path):
    shared = tmp_path / "shared"
    (shared / "hotpotqa").mkdir(parents=True)
    (shared / "hotpotqa" / "hotpot_dev_distractor_v1.first100.json").write_text(
        json.dumps([{"_id": "h1", "type": "bridge"}, {"_id": "h2", "type": "comparison"}])
    )
    a = {q: {"type": "untyped", "recall": 1.0, "all_gold": 1.0, "chunks": 5.0} for q in ("h1", "h2", "h3")}
    b = {q: {"type": "untyped", "recall": 0.5, "all_gold": 0.0, "chunks": 10.0} for q in a}
    from rerank_tables import known_types  # benchmarks/ is on the path while `bench` is in use

    rows = bench.paired_rows(a, b, known_types(shared, "hotpotqa"), resamples=50, seed=0)
    assert [(r.group, r.n) for r in rows] == [("all", 3), ("bridge", 1), ("comparison", 1), ("untyped", 1)]
    only_all = bench.paired_rows(a, b, {}, resamples=50, seed=0)
    assert [(r.group, r.n) for r in only_all] == [("all", 3)]


def test_runs_over_other_inputs_are_refused(bench, runs, tmp_path, capsys):
    loop, _ = runs
    other = _run(
        tmp_path / "other",
        [{"id": q, "retrieval": {"10": _scores(1.0, True, 10)}} for q in LOOP],
        index="idx2",
    )
    assert bench.main(["--pair", "x", str(loop), f"{other}@10"]) == 2
    err = capsys.readouterr().err
    assert "fingerprint field 'index' differs ('idx1' against 'idx2')" in err


def test_a_ranked_run_without_a_cut_off_is_refused_by_file_record_and_field(bench, runs, capsys):
    loop, direct = runs
    assert bench.main(["--pair", "x", str(loop), str(direct)]) == 2
    err = capsys.readouterr().err
    assert "predictions.jsonl, record 1 (id '2hop__a'): field retrieval['all'] is missing" in err
    assert f"read it as {direct}@K" in err


def test_questions_on_one_side_only_are_refused(bench, runs, tmp_path, capsys):
    loop, _ = runs
    fewer = _run(tmp_path / "fewer", [{"id": "2hop__a", "retrieval": {"10": _scores(1.0, True, 10)}}])
    assert bench.main(["--pair", "x", str(loop), f"{fewer}@10"]) == 2
    assert "question '2hop__b' is on one side only (3 such)" in capsys.readouterr().err


def test_a_folder_without_predictions_is_named(bench, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "run.json").write_text(json.dumps({"fingerprint": {"index": "i", "data": "d"}}))
    assert bench.main(["--pair", "x", str(empty), str(empty)]) == 2
    assert f"{empty / 'predictions.jsonl'}: no predictions" in capsys.readouterr().err


def test_parse_side(bench):
    assert bench.parse_side("runs/direct_r_k@10").k == 10
    assert bench.parse_side("runs/loop").k is None
    assert bench.parse_side("runs/a@b").folder.name == "a@b"


def test_the_tables_are_written_where_asked(bench, runs, tmp_path, capsys):
    loop, direct = runs
    out = tmp_path / "gap.md"
    assert (
        bench.main(["--pair", "MuSiQue", str(loop), f"{direct}@10", "--resamples", "50", "--out", str(out)])
        == 0
    )
    assert out.read_text() == capsys.readouterr().out
