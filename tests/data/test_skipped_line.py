"""``data.strict=false`` says on the console how many records it skipped and where they are listed
(issue 48: only ``skipped.jsonl`` said so, and a run over fewer questions looked complete)."""

from __future__ import annotations

import json
import logging

from efficientrag.cli import main

CHUNKS = [
    {"id": "alpha", "title": "Alpha Film", "text": "Alpha Film was directed by Bob Stone."},
    {"id": "bob", "title": "Bob Stone", "text": "Bob Stone was born in Lisbon."},
]
QUESTIONS = [
    {"id": "q1", "question": "Who directed Alpha Film?", "answers": ["Bob Stone"], "gold_ids": ["alpha"]},
    {"id": "q2", "question": "  ", "answers": ["x"], "gold_ids": ["alpha"]},
    {"id": "q3", "question": "Where was Bob born?", "answers": ["Lisbon"], "gold_ids": ["nowhere"]},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def skip_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]


def test_a_lenient_read_says_how_many_records_it_skipped_and_where(tmp_path, caplog):
    corpus = write_jsonl(tmp_path / "c.jsonl", CHUNKS)
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    work = tmp_path / "w"
    args = ["corpus", "--dataset", "jsonl", "--data", str(questions), "--corpus", str(corpus)]
    args += ["--work-dir", str(work), "data.strict=false"]
    listed = work / "data" / "skipped.jsonl"
    with caplog.at_level(logging.WARNING):
        assert main(args) == 0
    assert skip_lines(caplog) == [
        f"data.strict=false skipped 2 bad records; each is listed with its reason in {listed}"
    ]
    assert len(listed.read_text(encoding="utf-8").splitlines()) == 2
    # A later command over the prepared data says it again (it reads no file anew).
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(args) == 0
    assert len(skip_lines(caplog)) == 1


def test_nothing_is_said_when_nothing_was_skipped(tmp_path, caplog):
    corpus = write_jsonl(tmp_path / "c.jsonl", CHUNKS)
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:1])
    args = ["corpus", "--dataset", "jsonl", "--data", str(questions), "--corpus", str(corpus)]
    with caplog.at_level(logging.WARNING):
        assert main([*args, "--work-dir", str(tmp_path / "w"), "data.strict=false"]) == 0
    assert skip_lines(caplog) == []


def test_without_a_skipped_file_the_line_gives_the_first_reason(tmp_path, caplog):
    """The synthesis pipeline reads the data itself and writes no skipped.jsonl."""
    from efficientrag.data.config import DataConfig
    from efficientrag.data.loader import load_data, report_skipped

    corpus = write_jsonl(tmp_path / "c.jsonl", CHUNKS)
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:2])
    pooled = load_data(
        DataConfig(dataset="jsonl", path=str(questions), corpus_path=str(corpus), strict=False)
    )
    with caplog.at_level(logging.WARNING):
        assert report_skipped(pooled) == 1
    [line] = skip_lines(caplog)
    assert line.startswith(f"data.strict=false skipped 1 bad record; the first: {questions}, line 2")
