"""The docs pages' markdown tables as the tests that tie their numbers to committed reports read
them: one reader for every such test, so a table's layout is parsed one way."""

from __future__ import annotations

# How the docs name each dataset, and its name in data files and reports.
DATASETS = {"HotpotQA": "hotpotqa", "2Wiki": "2wikimultihopqa", "MuSiQue": "musique"}


def table_rows(text: str, header_start: str) -> list[list[str]]:
    """The body rows, as stripped cells, of the first markdown table in ``text`` whose header line
    starts with ``header_start`` (the table may be indented in a list).

    Raises:
        StopIteration: No such table.
    """
    lines = [line.strip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def search_and_training(cell: str) -> tuple[str, frozenset[str]]:
    """A "search, trained on" cell ("dense (MiniLM), HotpotQA + 2Wiki") as the reports' folder name
    of the search and the training files' dataset names."""
    engine, _, trained = cell.partition(", ")
    search = "dense" if engine.startswith("dense") else engine.lower()
    return search, frozenset(DATASETS[d.strip()] for d in trained.split("+"))
