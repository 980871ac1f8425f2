"""The benchmark script end to end on real data with a real BM25 index (answers scripted)."""

import importlib.util
import json

from efficientrag.eval.report import MARK


def test_fake_server_report_over_the_hotpotqa_sample(shared_data, repo_root, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location(
        "qa_report_fake", repo_root / "benchmarks" / "qa_report_fake.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = shared_data / "hotpotqa" / "dev_ircot.350.jsonl"
    assert (
        module.main(["--data", str(data), "--limit", "8", "--out", str(tmp_path), "--batch-size", "4"]) == 0
    )
    assert f"report: {tmp_path / 'report' / 'report.md'}" in capsys.readouterr().out

    md = (tmp_path / "report" / "report.md").read_text()
    assert "Answers not from a real model" in md and f"| self_ask {MARK} | hotpotqa | 8 |" in md
    rows = json.loads((tmp_path / "report" / "report.json").read_text())
    by_label = {r["label"]: r for r in rows["retrieval"]}
    # Real BM25 retrieval: Direct-R recall grows with k; every method that retrieves is scored.
    assert by_label["direct_r_qa@2"]["values"]["recall"] <= by_label["direct_r_qa@20"]["values"]["recall"]
    assert {"decompose_r", "iter_retgen", "self_ask"} <= set(by_label)
    quality = {r["label"]: r["values"] for r in rows["quality"]}
    # The oracle reader answers only from documents: closed-book methods get nothing right.
    assert quality["direct"]["contained"] == 0.0
    for summary_path in (tmp_path / "eval").glob("*/summary.json"):
        summary = json.loads(summary_path.read_text())
        assert summary["n"] == 8 and summary["num_failed"] == 0
        assert summary["qa_source"].startswith("scripted fake OpenAI server")
