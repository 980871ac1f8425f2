"""docs/reports/rerankers_24_sets.md's table of the rerankers as deployed (each alone or fused with the search's order,
chosen on validation) is the committed reports': ``benchmarks/retrieval_rerank.py
--validation-only`` writes one per direction, kept under docs/reports/rerank_validation/<search>/.
Each docs row's search-order score and deployed reranker (in domain the best on the set's own
validation questions, left out the pseudo-validation choice; or the search itself) must be that
report's, and the bullet that says every set is at or above the search holds only while every row
shows it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs_tables import DATASETS, search_and_training, table_rows

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "docs" / "reports" / "rerank_validation"
RESULTS = REPO / "docs" / "reports" / "rerankers_24_sets.md"
ROWS = {"cross-encoder": "rerank", "Labeler": "Labeler rerank"}
SEARCH_ROW = "the search's own order"


@dataclass(frozen=True)
class SetScores:
    """One set of a report: the search's order, and what is deployed there (row, fusion, score; the
    search itself as ``SEARCH_ROW``, ``"none"``)."""

    search: float
    deployed: tuple[str, str, float]


DEPLOYED = re.compile(
    r"(?P<set>[\w]+)(?: \(left out\))?: (?:no reranker, the search's own order (?P<floor>[\d.]+)"
    r"|(?P<row>.+?) \((?P<fusion>none|rrf)\) (?P<score>[\d.]+), (?:at or above|below) the search's"
    r" (?P<search>[\d.]+))"
)


def read_report(path: Path) -> dict[str, SetScores]:
    """Set name (``hotpotqa`` ...) -> what the report's closing line deploys there."""
    text = path.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("Deployed on each set ("))
    out = {}
    for item in line.split("), on its validation questions: ", 1)[1].rstrip(".").split("; "):
        m = DEPLOYED.fullmatch(item)
        assert m, f"{path.name}: cannot read {item!r}"
        if m["floor"]:
            out[m["set"]] = SetScores(float(m["floor"]), (SEARCH_ROW, "none", float(m["floor"])))
        else:
            out[m["set"]] = SetScores(float(m["search"]), (m["row"], m["fusion"], float(m["score"])))
    return out


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
    header = "| search, trained on | set | the search's own order | deployed"
    rows, search, train = [], "", frozenset()
    for cells in table_rows(RESULTS.read_text(encoding="utf-8"), header):
        if cells[0]:
            search, train = search_and_training(cells[0])
        dataset = DATASETS[cells[1].split(" (")[0]]
        if cells[3] == "no reranker (the search itself)":
            rows.append(DocRow(search, train, dataset, float(cells[2]), SEARCH_ROW, "none", float(cells[2])))
            continue
        best = re.fullmatch(r"(cross-encoder|Labeler) N=(\d+)(, fused)?: ([\d.]+)", cells[3])
        assert best, f"cannot read the deployed reranker in {cells[3]!r}"
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
    assert scores.deployed == (row.best_row, row.best_fusion, row.best_score), (
        f"{row}: the report deploys {scores.deployed}"
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
    said = "what validation deploys is at or above the search's own order on every set measured" in " ".join(
        RESULTS.read_text(encoding="utf-8").split()
    )
    assert said == (not below), below


PSEUDO_HEADER = (
    "| search, trained on | left out | pseudo questions: chain + single | the search's own order |"
)


def read_pseudo(path: Path) -> dict[str, tuple[int, int, float, tuple[str, str, float], str]]:
    """Left-out set -> (chain and single questions, the search's mean, the best reranker row's
    (row, fusion, mean), the chosen row) from a report's pseudo-validation table."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = {}
    for i, line in enumerate(lines):
        m = re.match(r"(\w+) \(left out\): chosen on (\d+) pseudo-validation and (\d+) pseudo-single", line)
        if not m:
            continue
        search, rows, chosen = 0.0, [], ""
        for row in lines[i + 4 :]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip("|").split("|")]
            values = cells[-1].split(" / ")
            if "**" in cells[-1]:
                chosen = (
                    cells[0]
                    if cells[0] == SEARCH_ROW
                    else f"{cells[0]} ({'none' if '**' in values[0] else 'rrf'})"
                )
            if cells[0] == SEARCH_ROW:
                search = float(values[0].replace("**", ""))
            else:
                alone, fused = (float(v.replace("**", "")) for v in values)
                rows.append((cells[0], "rrf", fused) if fused > alone else (cells[0], "none", alone))
        best = max(rows, key=lambda r: r[2])
        out[m[1]] = (int(m[2]), int(m[3]), search, best, chosen)
    return out


def pseudo_doc_rows() -> list[tuple[str, frozenset[str], str, list[str]]]:
    out = []
    for cells in table_rows(RESULTS.read_text(encoding="utf-8"), PSEUDO_HEADER):
        search, train = search_and_training(cells[0])
        out.append((search, train, DATASETS[cells[1]], cells))
    return out


def doc_row_name(cell: str) -> str:
    """A docs cell ("Labeler N=20, fused: 86.50") as the report names the row."""
    m = re.fullmatch(r"(cross-encoder|Labeler) N=(\d+)(, fused)?(: [\d.]+)?", cell)
    assert m, cell
    return f"{ROWS[m[1]]} N={m[2]} ({'rrf' if m[3] else 'none'})"


def test_each_left_out_sets_pseudo_choice_is_its_reports():
    rows = pseudo_doc_rows()
    reported = {}
    for path in sorted(REPORTS.glob("*/*.md")):
        train = frozenset(path.stem.split("_to_")[0].split("+"))
        for name, value in read_pseudo(path).items():
            reported[(path.parent.name, train, name)] = value
    assert {(s, t, d) for s, t, d, _ in rows} == set(reported)
    for search, train, dataset, cells in rows:
        chains, singles, own, best, chosen = reported[(search, train, dataset)]
        assert cells[2] == f"{chains} + {singles}", cells
        assert float(cells[3]) == own, cells
        assert (doc_row_name(cells[4]), float(cells[4].rsplit(": ", 1)[1])) == (
            f"{best[0]} ({best[1]})",
            best[2],
        )
        shown = SEARCH_ROW if cells[5] == "no reranker (the search itself)" else doc_row_name(cells[5])
        assert shown == chosen, cells
