"""The budget-replay numbers the results reports (docs/reports/retrieve_then_rerank.md's table,
docs/reports/rerankers_24_sets.md's sentence) quote are the committed replay report's
(docs/reports/budget_replay/), row by row: a table that outlived its replay fails here."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs_tables import table_rows

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "docs" / "reports" / "budget_replay" / "bm25_hotpotqa+2wikimultihopqa.md"
PAIR = re.compile(r"(\d+\.\d) / (\d+\.\d)")


def report_rows() -> dict[str, tuple[str, list[tuple[str, str]], bool]]:
    """Variant name -> (validation score, dev recall/all-gold pairs, chosen)."""
    rows = {}
    for line in REPORT.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or cells[0] == "variant" or len(cells) != 7:
            continue
        name = cells[0].replace("**", "").split(":")[0]
        rows[name] = (cells[3], [PAIR.search(c).groups() for c in cells[4:]], cells[0].startswith("**"))
    return rows


def quoted_rows() -> dict[str, list[str]]:
    """The results report's replay table: variant name -> its cells (bold dropped)."""
    rows = {}
    for row in table_rows(
        (REPO / "docs" / "reports" / "retrieve_then_rerank.md").read_text(encoding="utf-8"),
        "| budget's last step |",
    ):
        cells = [c.replace("**", "") for c in row]
        weight = re.search(r"rank_weight=([\d.]+)", cells[0])
        name = (
            f"fill-labeled-r{weight[1]}" if weight else "fill-labeled" if "fill_from" in cells[0] else "fill"
        )
        rows[name] = cells
    return rows


def test_results_md_quotes_every_replayed_variant_as_the_report_has_it():
    report, quoted = report_rows(), quoted_rows()
    assert set(quoted) == set(report) - {"recorded"}
    for name, cells in quoted.items():
        score, dev, chosen = report[name]
        assert cells[1] == score, name
        assert [PAIR.search(c).groups() for c in cells[2:]] == dev, name
        assert ("(chosen)" in cells[0]) == chosen, name


def test_the_comparison_quotes_the_chosen_weight_and_its_hotpotqa_dev_pair():
    chosen = next(name for name, (_, _, is_chosen) in report_rows().items() if is_chosen)
    recall, gold = report_rows()[chosen][1][0]
    results = " ".join(
        (REPO / "docs" / "reports" / "rerankers_24_sets.md").read_text(encoding="utf-8").split()
    )
    assert (
        f"validation chooses `rank_weight={chosen.removeprefix('fill-labeled-r')}`: {recall} / {gold} on HotpotQA"
        in results
    )
