"""Corpus records that cannot name or hold a chunk are refused where they are read (issue 48):
an empty or null id (the loop's seen-set would drop every later chunk sharing it), a chunk with
neither title nor text, an empty title in a title-keyed corpus; and a folder given as the corpus
is called a folder, not "file not found"."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from efficientrag.cli import main
from efficientrag.data.corpus import Corpus
from efficientrag.data.readers.corpus_file import read_corpus_file
from efficientrag.data.schema import Chunk
from efficientrag.errors import DataFormatError

GOOD = [
    {"id": "alpha", "title": "Alpha Film", "text": "Alpha Film was directed by Bob Stone."},
    {"id": "bob", "title": "Bob Stone", "text": "Bob Stone was born in Lisbon."},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        (
            {"id": "", "title": "T", "text": "x"},
            "id",
            "empty chunk id '': every chunk needs an id of its own",
        ),
        (
            {"id": "  ", "title": "T", "text": "x"},
            "id",
            "empty chunk id '  ': every chunk needs an id of its own",
        ),
        (
            {"id": None, "title": "T", "text": "x"},
            "id",
            "chunk id must be a string (or an integer), got null",
        ),
        (
            {"id": ["a"], "title": "T", "text": "x"},
            "id",
            "chunk id must be a string (or an integer), got list",
        ),
        (
            {"id": "c", "title": "", "text": " "},
            "text",
            "chunk has an empty title and an empty text: nothing to index it or find it by; drop the line or fill it",
        ),
        (
            {"id": "c", "contents": ""},
            "contents",
            "chunk has an empty title and an empty text: nothing to index it or find it by; drop the line or fill it",
        ),
        (
            {"id": "c", "title": "T", "text": "Born in \udc80 1990."},
            "text",
            "chunk text: not valid Unicode text: a lone surrogate (U+DC80) at character 8",
        ),
    ],
    ids=[
        "empty id",
        "blank id",
        "null id",
        "list id",
        "no title or text",
        "empty contents",
        "lone surrogate",
    ],
)
def test_a_chunk_that_cannot_be_named_or_found_is_refused_with_file_line_and_field(
    tmp_path, bad, field, message
):
    path = write_jsonl(tmp_path / "corpus.jsonl", [GOOD[0], bad, GOOD[1]])
    with pytest.raises(DataFormatError) as info:
        Corpus.load(path)
    assert str(info.value) == f"{path}, line 2, field '{field}': {message}"
    # The readers that pool a corpus file read it the same way.
    with pytest.raises(DataFormatError, match=f"line 2, field '{field}'"):
        read_corpus_file(path, dataset="jsonl")


def test_integer_ids_and_a_title_without_text_are_still_read(tmp_path, caplog):
    path = write_jsonl(tmp_path / "corpus.jsonl", [*GOOD, {"id": 7, "title": "Seven", "text": ""}])
    with caplog.at_level(logging.WARNING, logger="efficientrag.data.corpus"):
        corpus = Corpus.load(path)
    assert corpus.ids == ["alpha", "bob", "7"] and corpus.get("7").title == "Seven"
    assert "1 of 3 chunks have empty text (lines 3)" in caplog.text


def test_an_empty_id_is_refused_in_memory_too():
    with pytest.raises(ValueError, match=r"chunk 1 has an empty id ''"):
        Corpus([Chunk("a", "A", "x"), Chunk("", "B", "y")])


def test_an_empty_title_in_a_title_corpus_is_refused(tmp_path):
    path = tmp_path / "titles.json"
    path.write_text(json.dumps({"Alpha": "Alpha is a film.", "": "No title."}), encoding="utf-8")
    with pytest.raises(DataFormatError) as info:
        read_corpus_file(path, dataset="hotpotqa")
    assert str(info.value) == f"{path}, record 1, field 'title': empty title '': titles are the chunk ids"


def test_a_folder_given_as_the_corpus_is_called_a_folder(tmp_path, capsys):
    folder = tmp_path / "corpus_dir"
    folder.mkdir()
    with pytest.raises(DataFormatError) as info:
        Corpus.load(folder)
    said = f"{folder}: is a directory, not a file; name the file itself (e.g. DIR/corpus.jsonl)"
    assert str(info.value) == said
    code = main(["index", "--corpus", str(folder), "--work-dir", str(tmp_path / "w"), "retriever.kind=bm25"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == f"error: {said}"
    # A path with nothing there is still "not found".
    with pytest.raises(DataFormatError, match=f"^{tmp_path / 'absent.jsonl'}: file not found$"):
        Corpus.load(tmp_path / "absent.jsonl")
