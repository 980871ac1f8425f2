"""docs/reports/rerankers_24_sets.md's table of the rerankers as deployed on dev is the committed reports':
``benchmarks/retrieval_rerank.py --deployed-only`` writes one per direction, kept under
docs/reports/rerank_deployed/<search>/. Each docs row must be its report's row in every cell, and
the counts the docs give (the deployed reranker against the search's order, the loop against the
deployed reranker) must be those of the rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs_tables import DATASETS, search_and_training, table_rows

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "docs" / "reports" / "rerank_deployed"
RESULTS = REPO / "docs" / "reports" / "rerankers_24_sets.md"
HEADER = "| search, trained on | set | EfficientRAG (chunks) | the search's own order | deployed reranker |"
INTERVAL = re.compile(r"([+-][\d.]+) \[([+-][\d.]+), ([+-][\d.]+)\]")


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def reports() -> dict[tuple[str, frozenset[str], str], list[str]]:
    """(search, training files, set name) -> the report row's cells."""
    out = {}
    for path in sorted(REPORTS.glob("*/*.md")):
        train = frozenset(path.stem.split("+"))
        for line in path.read_text(encoding="utf-8").splitlines():
            row = cells(line)
            if line.startswith("| ") and len(row) == 10 and row[1].isdigit():
                out[(path.parent.name, train, row[0])] = row
    return out


def docs_rows() -> list[tuple[str, frozenset[str], str, list[str]]]:
    """Each docs row: its search, training files, report set name and cells."""
    rows, search, train = [], "", frozenset()
    for row in table_rows(RESULTS.read_text(encoding="utf-8"), HEADER):
        if row[0]:
            search, train = search_and_training(row[0])
        label = row[1].removesuffix(" (left out)")
        base, _, open_domain = label.partition(" open-domain")
        rows.append((search, train, DATASETS[base] + (" open-domain" if _ else ""), row))
    return rows


ROWS = docs_rows()
REPORTED = reports()


def gap(cell: str) -> tuple[float, float, float]:
    m = INTERVAL.search(cell)
    assert m, cell
    return float(m[1]), float(m[2]), float(m[3])


@pytest.mark.parametrize("search, train, name, row", ROWS, ids=[f"{r[0]}-{r[2]}-{len(r[1])}" for r in ROWS])
def test_each_docs_row_is_its_reports(search, train, name, row):
    report = REPORTED.get((search, train, name))
    assert report, f"no committed report row for {search} {sorted(train)} {name}"
    loop, chunks = re.fullmatch(r"\*{0,2}([\d.]+ / [\d.]+)\*{0,2} \(([\d.]+)\)", row[2]).groups()
    assert (loop, chunks) == (report[3], report[2])
    reranker = row[4].replace("cross-encoder", "rerank").replace("Labeler", "Labeler rerank")
    assert [row[3], reranker, row[5], row[6], row[7]] == [
        report[4],
        report[5],
        report[6],
        report[7],
        f"{report[8]} / {report[9]}",
    ]


def test_every_committed_row_is_in_the_docs():
    shown = {(s, t, n) for s, t, n, _ in ROWS}
    assert set(REPORTED) == shown


@pytest.mark.parametrize(
    "search, lead, label", [("bm25", "With BM25", "BM25"), ("dense", "With dense search", "dense")]
)
def test_the_counts_the_docs_give_are_the_rows(search, lead, label):
    """The bullets under the table count, per search and by recall's interval, the deployed reranker
    against the search's order, and the sets where the loop's estimate is higher than its."""
    rows = [row for s, _, _, row in ROWS if s == search]
    if not rows:
        pytest.skip(f"no {search} rows")
    verdicts = {"above": 0, "tied with": 0, "below": 0}
    loop_higher = 0
    for row in rows:
        _, low, high = gap(row[6])
        verdicts["above" if low > 0 else "below" if high < 0 else "tied with"] += 1
        loop = float(row[2].replace("*", "").split(" / ")[0])
        loop_higher += loop > float(row[5].split(" / ")[0])
    text = " ".join(RESULTS.read_text(encoding="utf-8").replace("**", "").split())
    said = (
        f"{lead} the deployed reranker is above the search's own order on {verdicts['above']} sets,"
        f" tied with it on {verdicts['tied with']} and below it on {verdicts['below']} (by recall's paired"
        " interval)"
    )
    assert said in text
    assert f"on {loop_higher} of {len(rows)} {label} sets" in text


def test_the_readme_counts_the_loop_against_the_deployed_reranker_over_every_row():
    higher = sum(
        float(row[2].replace("*", "").split(" / ")[0]) > float(row[5].split(" / ")[0]) for *_, row in ROWS
    )
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert f"and on {higher} of {len(ROWS)} against the reranker validation hands a user" in readme
