import json

import pytest
import yaml

from efficientrag.eval.report import MARK, write_report


def _run(tmp_path, name, summary, config=None):
    d = tmp_path / name
    d.mkdir()
    (d / "summary.json").write_text(json.dumps(summary))
    if config is not None:
        (d / "config.yaml").write_text(yaml.safe_dump(config))
    return d


def _retr(n, recall, k, dups=None):
    return {"n": n, "recall": recall, "all_gold": recall / 2, "answer_recall": 50.0, "num_chunks": k,
            "num_chunks_with_dups": dups or k}  # fmt: skip


@pytest.fixture()
def runs(tmp_path):
    config = {
        "data": {"dataset": "hotpotqa", "path": "/data/hotpot_dev.json"},
        "retriever": {"kind": "bm25"},
        "generator": {"backend": "openai", "openai": {"llm": {"model": "fake-model"}}},
        "baselines": {"direct_r": {"top_k": 10}, "iter_retgen": {"iterations": 3}},
        "eval": {"limit": 20},
    }
    iter_summary = {
        "method": "iter_retgen",
        "dataset": "hotpotqa",
        "n": 20,
        "ranked": False,
        "retrieval": {"all": _retr(20, 80.0, 16.0, 30.0)},
        "qa": {"n": 20, "em": 40.0, "f1": 50.0, "contained": 45.0},
        "views": {
            "iter2": {
                "n": 20,
                "retrieval": _retr(20, 75.0, 12.0, 20.0),
                "qa": {"n": 20, "em": 30.0, "f1": 40.0, "contained": 35.0},
            },
            "last_iteration": {"n": 20, "retrieval": _retr(20, 60.0, 10.0)},
        },
        "counters_mean": {
            "llm_calls": 3.0,
            "prompt_tokens": 2400.0,
            "completion_tokens": 90.0,
            "retrieval_calls": 3.0,
            "time_retrieval_s": 0.25,
            "time_generate_s": 1.0,
        },  # fmt: skip
        "qa_source": "scripted fake OpenAI server",
    }
    direct_r = {
        "method": "direct_r_qa",
        "n": 20,
        "ranked": True,
        "retrieval": {"10": _retr(20, 70.0, 10.0), "20": _retr(20, 75.0, 20.0)},
        "qa": {"n": 20, "em": 20.0, "f1": 30.0, "contained": 25.0, "acc": 35.0, "n_acc": 20},
        "counters_mean": {
            "llm_calls": 1.0,
            "prompt_tokens": 1500.0,
            "completion_tokens": 9.0,
            "retrieval_calls": 1.0,
            "time_retrieval_s": 0.01,
            "time_answer_s": 0.5,
        },  # fmt: skip
    }
    return [
        _run(tmp_path, "iter_retgen", iter_summary, config),
        _run(tmp_path, "direct_r_qa", direct_r, config),
    ]


def test_report_tables_paper_numbers_and_marks(runs, tmp_path):
    path = write_report(runs, tmp_path / "report", title="Harness check", qa_source_note=None)
    md = path.read_text()
    lines = md.splitlines()
    assert lines[0] == "# Harness check"
    # Iter-RetGen with 3 iterations lines up with the paper's iter3 row, its iter2 view with iter2.
    (row,) = [
        line
        for line in lines
        if line.startswith(f"| iter_retgen {MARK} | hotpotqa | 20 | 40.00 | 50.00 | 45.00")
    ]
    assert row.endswith("| – / 56.76 / 60.89 / 57.56 |")
    (row,) = [line for line in lines if line.startswith(f"| iter_retgen[iter2] {MARK} |")]
    assert row.endswith("| – / 55.45 / 59.47 / 59.29 |")
    # Direct-R: QA from the top 10 (paper @10), retrieval at each cut-off, Acc shown.
    (row,) = [line for line in lines if line.startswith("| direct_r_qa (answer from top 10) | hotpotqa |")]
    assert "| 35.00 |" in row and row.endswith("| – / 38.24 / 44.55 / 44.56 |")
    (row,) = [line for line in lines if line.startswith("| direct_r_qa@20 |")]
    assert row.endswith("| 74.87 / 20.00 |")
    (row,) = [line for line in lines if line.startswith("| iter_retgen[last_iteration] |")]
    assert row.endswith("| 50.00 |  |")  # FlashRAG-style last-iteration view: no paper number
    # Only the run whose summary says so is marked; the warning names it.
    assert "`iter_retgen`: scripted fake OpenAI server." in md
    assert not any(line.startswith(f"| direct_r_qa (answer from top 10) {MARK}") for line in lines)
    # Cost: latency is the sum of the stage times; the paper's Table 4 is MuSiQue only.
    (row,) = [
        line
        for line in lines
        if line.startswith(f"| iter_retgen {MARK} | hotpotqa | 20 | 3.00 | 2400.0 | 90.0 | 3.00 | 1.250 |")
    ]
    assert "**Split.**" in md and "`/data/hotpot_dev.json`, 20 questions (eval.limit 20)" in md
    assert "*contained*" in md and "generator openai:fake-model; retriever BM25" in md
    for png in ("quality_vs_llm_calls.png", "recall_vs_chunks.png"):
        data = (tmp_path / "report" / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
    rows = json.loads((tmp_path / "report" / "report.json").read_text())
    (q,) = [r for r in rows["quality"] if r["label"] == "iter_retgen"]
    assert q["variant"] == "iter3" and q["paper"]["contained"]["source"].endswith("Table 3")


def test_caller_note_marks_every_run(runs, tmp_path):
    md = write_report(
        runs, tmp_path / "r", title="t", qa_source_note="Answers came from a scripted server."
    ).read_text()
    assert "Answers came from a scripted server." in md
    assert f"| direct_r_qa (answer from top 10) {MARK} |" in md and f"| direct_r_qa {MARK} |" in md


def test_report_rejects_a_folder_without_summary(tmp_path):
    with pytest.raises(FileNotFoundError, match="no summary.json"):
        write_report([tmp_path], tmp_path / "out", title="t")
    with pytest.raises(ValueError, match="at least one"):
        write_report([], tmp_path / "out", title="t")


def test_cli_report_writes_and_prints_the_report(runs, tmp_path, capsys):
    from efficientrag.cli import main

    out = tmp_path / "cli_report"
    code = main(
        ["report", *map(str, runs), "--out", str(out), "--title", "CLI check", "--qa-note", "scripted"]
    )
    assert code == 0
    printed = capsys.readouterr().out
    md = (out / "report.md").read_text()
    assert printed.startswith(md) and md.startswith("# CLI check")
    assert "scripted" in md and (out / "report.json").is_file()
    assert main(["report", str(tmp_path / "missing"), "--out", str(out)]) == 2


def test_the_methods_say_whether_their_paper_rows_go_by_generator_model():
    # The report asks the method classes (their public attribute), not the active-RAG base class.
    from efficientrag.baselines.registry import METHODS
    from efficientrag.eval.report import ACTIVE_METHODS

    per_model = {name for name, cls in METHODS.items() if cls.paper_rows_per_model}
    assert per_model == {"wo_rag", "sr_rag", "fl_rag", "fs_rag", "flare", "flare_instruct", "dragin"}
    assert per_model == ACTIVE_METHODS
