"""docs/results.md's table of the rerankers as deployed (each alone or fused with the search's order,
chosen on validation) is the committed reports': ``benchmarks/retrieval_rerank.py
--validation-only`` writes one per direction, kept under docs/reports/rerank_validation/<search>/.
Each docs row's search-order score and best chosen reranker must be that report's, and the bullet
that says every set is at or above the search holds only while every row shows it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "docs" / "reports" / "rerank_validation"
RESULTS = REPO / "docs" / "results.md"
DATASETS = {"HotpotQA": "hotpotqa", "2Wiki": "2wikimultihopqa", "MuSiQue": "musique"}
ROWS = {"cross-encoder": "rerank", "Labeler": "Labeler rerank"}
SEARCH_ROW = "the search's own order"


@dataclass(frozen=True)
class SetScores:
    """One set's column of a report: the search's order, and each row's chosen fusion and score."""

    search: float
    chosen: dict[str, tuple[str, float]]


def read_report(path: Path) -> dict[str, SetScores]:
    """Set name (``hotpotqa`` ...) -> its column of the report's fusion table."""
    lines = path.read_text(encoding="utf-8").splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| reranker | chosen |"))
    sets = [c.strip().removesuffix(" (left out)") for c in lines[head].strip("|").split("|")[2:-1]]
    search, chosen = {}, {s: {} for s in sets}
    for line in lines[head + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        row, fusion, values = cells[0], cells[1], cells[2 : 2 + len(sets)]
        for name, cell in zip(sets, values, strict=True):
            if row == SEARCH_ROW:
                search[name] = float(cell)
            else:
                alone, fused = (float(v.replace("**", "")) for v in cell.split(" / "))
                chosen[name][row] = (fusion, fused if fusion == "rrf" else alone)
    return {s: SetScores(search[s], chosen[s]) for s in sets}


def reports() -> dict[tuple[str, frozenset[str]], dict[str, SetScores]]:
    """(search, training files) -> the report's sets."""
    out = {}
    for path in sorted(REPORTS.glob("*/*.md")):
        train = frozenset(path.stem.split("_to_")[0].split("+"))
        out[(path.parent.name, train)] = read_report(path)
    return out


@dataclass(frozen=True)
class DocRow:
    search: str
    train: frozenset[str]
    dataset: str
    search_score: float
    best_row: str
    best_fusion: str
    best_score: float


def doc_rows() -> list[DocRow]:
    lines = [line.strip() for line in RESULTS.read_text(encoding="utf-8").splitlines()]
    start = next(
        i for i, line in enumerate(lines) if line.startswith("| search, trained on | set | the search's own")
    )
    rows, search, train = [], "", frozenset()
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0]:
            engine, _, trained = cells[0].partition(", ")
            search = "dense" if engine.startswith("dense") else engine.lower()
            train = frozenset(DATASETS[d.strip()] for d in trained.split("+"))
        dataset = DATASETS[cells[1].split(" (")[0]]
        best = re.fullmatch(r"(cross-encoder|Labeler) N=(\d+)(, fused)?: ([\d.]+)", cells[3])
        assert best, f"cannot read the best chosen reranker in {cells[3]!r}"
        rows.append(
            DocRow(
                search,
                train,
                dataset,
                float(cells[2]),
                f"{ROWS[best[1]]} N={best[2]}",
                "rrf" if best[3] else "none",
                float(best[4]),
            )
        )
    return rows


REPORTED = reports()
DOC_ROWS = doc_rows()


def check(row: DocRow) -> None:
    report = REPORTED.get((row.search, row.train))
    assert report is not None, f"no report for {row.search} trained on {sorted(row.train)}"
    scores = report[row.dataset]
    assert scores.search == row.search_score, f"{row}: the report's search order is {scores.search}"
    best = max(scores.chosen, key=lambda r: scores.chosen[r][1])
    assert (best, *scores.chosen[best]) == (row.best_row, row.best_fusion, row.best_score), (
        f"{row}: the report's best chosen reranker is {best} {scores.chosen[best]}"
    )


def test_the_table_is_found_and_each_report_is_quoted():
    assert len(DOC_ROWS) >= 3
    assert {(r.search, r.train) for r in DOC_ROWS} == set(REPORTED)


@pytest.mark.parametrize("row", DOC_ROWS, ids=lambda r: f"{r.search}-{'+'.join(sorted(r.train))}-{r.dataset}")
def test_each_row_is_its_reports(row):
    check(row)


def test_a_changed_number_or_name_is_caught():
    row = DOC_ROWS[0]
    for changed in (
        DocRow(**{**row.__dict__, "search_score": row.search_score + 0.01}),
        DocRow(**{**row.__dict__, "best_score": row.best_score - 0.01}),
        DocRow(**{**row.__dict__, "best_fusion": "none" if row.best_fusion == "rrf" else "rrf"}),
    ):
        with pytest.raises(AssertionError):
            check(changed)


def test_the_docs_say_at_or_above_everywhere_only_while_every_row_shows_it():
    below = [r for r in DOC_ROWS if r.best_score < r.search_score]
    said = "best reranker is at or above the search's own order on every set measured" in " ".join(
        RESULTS.read_text(encoding="utf-8").split()
    )
    assert said == (not below), below
