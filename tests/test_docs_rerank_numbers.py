"""The rerank numbers the docs quote are a committed report's, and the README's summary counts them.

``benchmarks/retrieval_rerank.py`` writes one report per run; the ones the docs quote are kept
under ``docs/reports/rerank/<search>/``. Each row of docs/reports/rerankers_24_sets.md's 24-set table and of the
framework pages' tables must match one section of one such report in every cell it shows (a
summary table that outlived the run it quotes was found by hand twice before this test), and the
README's counts of leads, ties and losses are those of the tables it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from tests.docs_tables import DATASETS, search_and_training, table_rows

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "docs" / "reports" / "rerank"
PAIR = re.compile(r"([\d.]+) / ([\d.]+)")


@dataclass
class Section:
    """One ``### <set>`` of a report: where the set stood and the at-chunk-count table."""

    report: str
    search: str
    train: frozenset[str]
    where: str
    chunks: float
    # method (its "@<chunks>" suffix and bold dropped) -> recall, all-gold, answer recall, s/q
    rows: dict[str, tuple[float, ...]] = field(default_factory=dict)


def read_reports() -> dict[str, list[Section]]:
    """Every report's sections by set name (``hotpotqa``, ``2wikimultihopqa open-domain`` ...)."""
    sections: dict[str, list[Section]] = {}
    for path in sorted(REPORTS.glob("*/*.md")):
        train = frozenset(path.stem.split("_to_")[0].split("+"))
        current: Section | None = None
        for line in path.read_text(encoding="utf-8").splitlines():
            head = re.match(r"^### (.+) \(\d+ [a-z ]+, (in domain|left out)\)$", line)
            if head:
                current = Section(path.name, path.parent.name, train, head[2], float("nan"))
                sections.setdefault(head[1], []).append(current)
            chunks = re.match(r"^At EfficientRAG's own chunk count \(([\d.]+) per question\):$", line)
            if chunks and current is not None:
                current.chunks = float(chunks[1])
            cells = [c.strip() for c in line.strip("|").split("|")]
            if current is not None and len(cells) == 5 and re.fullmatch(r"[\d.]+", cells[-1]):
                name = re.sub(r" @[\d.]+$", "", cells[0].replace("**", ""))
                current.rows[name] = tuple(float(c) for c in cells[1:])
    return sections


SECTIONS = read_reports()


def pair(cell: str) -> tuple[float, float]:
    m = PAIR.search(cell.replace("**", ""))
    assert m, f"no 'recall / all-gold' in {cell!r}"
    return float(m[1]), float(m[2])


def close(shown: float, exact: float, places: int) -> bool:
    """``shown`` is ``exact`` rounded to ``places`` decimals (either rounding of a tie)."""
    return abs(shown - exact) <= 0.5 * 10**-places + 1e-9


@dataclass
class Claim:
    """What one docs row says: the set, and cells that a report section must all match."""

    set_name: str
    search: str
    train: frozenset[str] | None
    where: str | None
    checks: list[tuple[str, int, float, int]]  # method, column, shown value, decimals
    chunks: float | None = None

    def mismatches(self, s: Section) -> list[str]:
        wrong = []
        if self.chunks is not None and not close(self.chunks, s.chunks, 2):
            wrong.append(f"chunks {self.chunks} != {s.chunks}")
        for method, column, shown, places in self.checks:
            row = s.rows.get(method)
            if row is None or not close(shown, row[column], places):
                wrong.append(f"{method}[{column}] {shown} != {row[column] if row else 'missing'}")
        return wrong


def candidates(claim: Claim) -> list[Section]:
    """The report sections a row may quote: its set, search, training files and setting."""
    return [
        s
        for s in SECTIONS.get(claim.set_name, [])
        if s.search == claim.search
        and (claim.train is None or s.train == claim.train)
        and (claim.where is None or s.where == claim.where)
    ]


def check(claim: Claim) -> None:
    found = candidates(claim)
    assert found, f"no committed report has {claim.set_name!r} for {claim.search} {claim.train}"
    misses = {s.report: claim.mismatches(s) for s in found}
    assert any(not m for m in misses.values()), f"{claim.set_name}: no report matches: {misses}"


def set_name(cell: str) -> tuple[str, str | None]:
    """A docs row's set cell -> the report's set name and, where the cell says, left out or not."""
    label = re.sub(r", \d+ q", "", cell).strip()
    where = "left out" if "(left out)" in label else ("in domain" if "(in domain)" in label else None)
    label = re.sub(r" \((left out|in domain)\)", "", label)
    base, _, suffix = label.partition(" open-domain")
    name = DATASETS[base] + (" open-domain" if _ else "")
    assert not suffix, cell
    return name, where


RESULTS = REPO / "docs" / "reports" / "rerankers_24_sets.md"
# The paired table of the loop against the search's own top 10.
PAIRED = REPO / "docs" / "reports" / "retrieve_then_rerank.md"


def comparison_claims() -> list[Claim]:
    claims, search, train, previous = [], "", frozenset(), ""
    for cells in table_rows(RESULTS.read_text(encoding="utf-8"), "| search, trained on | set |"):
        if cells[0]:
            search, train = search_and_training(cells[0])
        if cells[1].startswith("the same after `efficientrag adapt`"):
            name, where = previous + " after adaptation", None
        else:
            name, where = set_name(cells[1])
            where = where or "in domain"
            previous = name
        loop, own, best = pair(cells[2]), pair(cells[3]), pair(cells[4])
        reranker = "Labeler rerank N=20" if "Labeler" in cells[4] else "rerank N=20"
        seconds = [float(x) for x in cells[5].replace("**", "").split(" / ")]
        chunks = float(re.search(r"\(([\d.]+)\)", cells[2])[1])
        checks = [
            ("EfficientRAG", 0, loop[0], 1),
            ("EfficientRAG", 1, loop[1], 1),
            ("Direct-R", 0, own[0], 1),
            ("Direct-R", 1, own[1], 1),
            (reranker, 0, best[0], 1),
            (reranker, 1, best[1], 1),
            ("EfficientRAG", 3, seconds[0], 2),
            (reranker, 3, seconds[1], 2),
        ]
        claims.append(Claim(name, search, train, where, checks, chunks))
    return claims


def best_reranker(claim: Claim) -> str:
    return next(m for m, col, *_ in claim.checks if col == 0 and "N=20" in m)


def shown(claim: Claim, method: str) -> tuple[float, float]:
    """The (recall, all-gold) a comparison row shows for ``method``."""
    values = {col: value for m, col, value, _ in claim.checks if m == method and col < 2}
    return values[0], values[1]


def prose(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


FRAMEWORK_PAGES = ("langchain.md", "llamaindex.md", "haystack.md")


def framework_claims(page: str) -> list[Claim]:
    claims = []
    for cells in table_rows((REPO / "docs" / page).read_text(encoding="utf-8"), "| dev set (BM25 search) |"):
        name, where = set_name(cells[0])
        loop, top20, top50 = pair(cells[1]), pair(cells[2]), pair(cells[3])
        seconds = [float(x) for x in cells[4].split(" / ")]
        checks = [
            ("EfficientRAG", 0, loop[0], 1),
            ("EfficientRAG", 1, loop[1], 1),
            ("rerank N=20", 0, top20[0], 1),
            ("rerank N=20", 1, top20[1], 1),
            ("rerank N=50", 0, top50[0], 1),
            ("rerank N=50", 1, top50[1], 1),
            ("EfficientRAG", 3, seconds[0], 2),
            ("rerank N=20", 3, seconds[1], 2),
        ]
        chunks = float(re.search(r"\(([\d.]+)\)", cells[1])[1])
        claims.append(Claim(name, "bm25", None, where, checks, chunks))
    return claims


COMPARISON = comparison_claims()


def test_the_reports_parse_into_sections_with_their_chunk_count_and_methods():
    assert len(SECTIONS) >= 4
    for name, sections in SECTIONS.items():
        for s in sections:
            assert s.chunks == s.chunks, f"{s.report} {name}: no chunk count"
            assert {"EfficientRAG", "Direct-R", "rerank N=20", "Labeler rerank N=20"} <= set(s.rows), s.report


def test_the_comparison_table_is_found_and_parsed():
    assert len(COMPARISON) == 24


@pytest.mark.parametrize("claim", COMPARISON, ids=lambda c: f"{c.search}-{c.set_name}")
def test_each_comparison_row_is_a_reports(claim):
    check(claim)


@pytest.mark.parametrize("claim", COMPARISON, ids=lambda c: f"{c.search}-{c.set_name}")
def test_the_best_reranker_is_the_better_of_the_two_over_20(claim):
    """The column "best reranker (top 20)" names the better at the loop's chunk count: by recall,
    then all-gold."""
    named = best_reranker(claim)
    other = "rerank N=20" if named.startswith("Labeler") else "Labeler rerank N=20"
    for s in candidates(claim):
        if not claim.mismatches(s):
            assert s.rows[named][:2] >= s.rows[other][:2], f"{other} beats {named} in {s.report}"


@pytest.mark.parametrize("page", FRAMEWORK_PAGES)
def test_each_framework_pages_rerank_row_is_a_reports(page):
    claims = framework_claims(page)
    assert len(claims) >= 4
    for claim in claims:
        check(claim)


def test_a_changed_number_is_caught():
    """The check is not vacuous: the table's first row with one digit moved fails it."""
    claim = COMPARISON[0]
    method, column, value, places = claim.checks[0]
    moved = replace(claim, checks=[(method, column, value + 0.1, places), *claim.checks[1:]])
    with pytest.raises(AssertionError, match="no report matches"):
        check(moved)
    last = claim.checks[-1]
    slower = replace(claim, checks=[*claim.checks[:-1], (last[0], last[1], last[2] + 0.02, last[3])])
    with pytest.raises(AssertionError, match="no report matches"):
        check(slower)


def test_the_docs_say_the_loop_is_higher_everywhere_only_while_every_row_shows_it():
    """docs/reports/rerankers_24_sets.md says the loop's estimate "is higher on every set measured", and the README "on
    all N sets", exactly while the loop is above both the search's own order and the best reranker
    on every row (by recall, then all-gold)."""
    behind = [
        f"{c.search} {c.set_name}"
        for c in COMPARISON
        if shown(c, "EfficientRAG") <= max(shown(c, "Direct-R"), shown(c, best_reranker(c)))
    ]
    assert ("The loop's estimate is higher on every set measured" in prose(RESULTS)) == (not behind), behind
    readme = f"the loop's estimate is higher on all {len(COMPARISON)} sets" in prose(REPO / "README.md")
    assert readme == (not behind), behind


def test_the_limits_count_the_rows_where_the_best_reranker_is_below_the_search():
    """The Limits bullet's "below the search's own order on N of these M rows" is the table's count."""
    said = re.search(r"below the search's own order on (\d+) of these (\d+) rows", prose(RESULTS))
    assert said, "the Limits bullet no longer gives the count"
    below = sum(shown(c, best_reranker(c)) < shown(c, "Direct-R") for c in COMPARISON)
    assert (int(said[1]), int(said[2])) == (below, len(COMPARISON))


def test_the_readme_counts_leads_ties_and_losses_from_the_paired_intervals():
    """Against the question's top 10: a row is a lead only where its recall interval is above zero,
    a loss where it is below, a tie otherwise; the README's counts are the paired table's (its
    current rows, not the earlier `fill` one)."""
    rows = [
        cells
        for cells in table_rows(
            PAIRED.read_text(encoding="utf-8"),
            "| dev set, search, trained on (loop setting) | loop / Direct-R@10 |",
        )
        if not cells[0].startswith("the same with")
    ]
    verdicts = {"ahead": 0, "tied": 0, "behind": 0}
    for cells in rows:
        low, high = (float(x) for x in re.search(r"\[([-+][\d.]+), ([-+][\d.]+)\]", cells[2]).groups())
        verdicts["ahead" if low > 0 else "behind" if high < 0 else "tied"] += 1
    said = re.search(
        r"intervals were computed \((\d+) rows, .*?\): ahead on (\d+), tied on (\d+) .*?, behind on (\d+)",
        prose(REPO / "README.md"),
    )
    assert said, "the README no longer counts the paired rows"
    assert [int(x) for x in said.groups()] == [
        len(rows),
        verdicts["ahead"],
        verdicts["tied"],
        verdicts["behind"],
    ]
