"""docs/reports/containing_loop.md's table of the loop that contains its reranker is the committed report's
(docs/reports/rerank_containment_toy.md, written by benchmarks/rerank_containment.py): every number
of every row, in the report's order."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs_tables import table_rows

DOCS = Path(__file__).resolve().parent.parent / "docs"
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def table_after(text: str, header_start: str) -> list[list[str]]:
    """The rows (cells without the method's name) of the first table whose header starts so."""
    return [cells[1:] for cells in table_rows(text, header_start)]


def numbers(cells: list[str]) -> list[float]:
    return [float(x) for cell in cells for x in NUMBER.findall(cell)]


def test_the_results_table_is_the_reports():
    report = table_after((DOCS / "reports" / "rerank_containment_toy.md").read_text(), "| method |")
    results = (DOCS / "reports" / "containing_loop.md").read_text()
    section = results[results.index("# A loop that contains its Labeler as a reranker") :]
    docs = table_after(section, "| method |")
    assert len(docs) == len(report) == 7
    for ours, theirs in zip(docs, report, strict=True):
        assert numbers(ours) == numbers(theirs), (ours, theirs)


def test_the_chosen_row_is_the_reports_chosen_one():
    report = (DOCS / "reports" / "rerank_containment_toy.md").read_text()
    chosen = re.search(r"chosen: \*\*(.+?)\*\*", report).group(1)
    assert chosen == "calibrated, with rank"
    assert f"| **loop, rerank ({chosen})** |" in report
    assert "Platt with the rank (chosen)** |" in (DOCS / "reports" / "containing_loop.md").read_text()


def test_the_adaptation_method_table_is_the_reports():
    report = (DOCS / "reports" / "adaptation" / "bm25_hotpotqa.md").read_text()
    adaptation = (DOCS / "adaptation.md").read_text()
    section = adaptation[adaptation.index("### Measured: HotpotQA left out, BM25") :]
    docs, theirs = table_after(section, "| method on dev |"), table_after(report, "| method on dev |")
    assert len(docs) == len(theirs) == 4
    for ours, row in zip(docs, theirs, strict=True):
        assert numbers(ours) == numbers(row), (ours, row)
    assert "| loop_rerank_calibrated (chosen) |" in report
    assert "| loop_rerank_calibrated | -0.4 [-3.0, +2.0] tie | -0.6 [-5.1, +4.0] tie |" in report


def _report_row(section: str, name: str) -> list[str]:
    """A method's cells in a report section's first table (with the method's name)."""
    line = next(x for x in section.splitlines() if x.startswith(f"| {name} |") or x.startswith(f"| {name} ("))
    return [c.strip() for c in line.strip().strip("|").split("|")][1:]


def _bullet(text: str, start: str) -> str:
    """The docs bullet that begins with ``start``, on one line (it ends at the next bullet or blank line)."""
    return " ".join(re.split(r"\n\n|\n- ", text[text.index(start) :])[0].split())


# Each protocol direction's docs table (its header's first cell), the report behind it with the report
# sections its rows come from, in order, and the bullet that quotes its pair-budget rows.
BM25_TRADE_OFF = "- **A trade-off, not a choice**"
DENSE_TRADE_OFF = "- **Dense, a trade-off again**"
DENSE_HOTPOTQA_2WIKI_TRADE_OFF = "- **Dense HotpotQA + 2Wiki, the trade-off**"
DENSE_HOTPOTQA_MUSIQUE_TRADE_OFF = "- **Dense HotpotQA + MuSiQue, the trade-off**"
DIRECTIONS = {
    "| trained on 2Wiki + MuSiQue, set |": (
        "bm25_2wikimultihopqa+musique.md",
        [
            "hotpotqa (left out)",
            "2wikimultihopqa (in domain)",
            "musique (in domain)",
            "2wikimultihopqa open-domain",
        ],
        BM25_TRADE_OFF,
    ),
    "| trained on HotpotQA + 2Wiki, set |": (
        "bm25_hotpotqa+2wikimultihopqa.md",
        ["musique (left out)", "2wikimultihopqa (in domain)"],
        BM25_TRADE_OFF,
    ),
    "| trained on HotpotQA + MuSiQue, set |": (
        "bm25_hotpotqa+musique.md",
        ["2wikimultihopqa (left out)", "hotpotqa (in domain)", "musique (in domain)"],
        BM25_TRADE_OFF,
    ),
    "| dense, trained on 2Wiki + MuSiQue, set |": (
        "dense_2wikimultihopqa+musique.md",
        [
            "hotpotqa (left out)",
            "2wikimultihopqa (in domain)",
            "musique (in domain)",
            "2wikimultihopqa open-domain",
        ],
        DENSE_TRADE_OFF,
    ),
    "| dense, trained on HotpotQA + 2Wiki, set |": (
        "dense_hotpotqa+2wikimultihopqa.md",
        ["musique (left out)", "2wikimultihopqa (in domain)"],
        DENSE_HOTPOTQA_2WIKI_TRADE_OFF,
    ),
    "| dense, trained on HotpotQA + MuSiQue, set |": (
        "dense_hotpotqa+musique.md",
        ["2wikimultihopqa (left out)", "hotpotqa (in domain)", "musique (in domain)"],
        DENSE_HOTPOTQA_MUSIQUE_TRADE_OFF,
    ),
}


def test_the_protocol_containment_tables_are_the_reports():
    results = (DOCS / "reports" / "containing_loop.md").read_text()
    section = results[results.index("# The loop containing its reranker, honest protocol (BM25)") :]
    for header, (file, sets, _) in DIRECTIONS.items():
        report = (DOCS / "reports" / "containment" / file).read_text()
        docs = table_after(section, header)
        assert len(docs) == len(sets), file
        for ours, name in zip(docs, sets, strict=True):
            part = report[report.index(f"## {name}") :]
            part = part[: part.index("Against the search's own top 10")]
            rerank, loop, chosen = (
                _report_row(part, m) for m in ("labeler_rerank", "loop", "loop_rerank_calibrated")
            )
            # The reranker: recall / all-gold, pairs, seconds; the loop: recall / all-gold, chunks; the
            # chosen loop: recall / all-gold, pairs, seconds, then its four gaps with their intervals.
            want = numbers([rerank[0], rerank[2], rerank[3], loop[0], loop[1], chosen[0], *chosen[2:]])
            assert numbers(ours) == want, (file, name, ours)
        assert "**loop_rerank_calibrated**" in report and report.count("(chosen)") == len(sets)


def test_the_pair_budget_trade_off_quotes_the_reports_rows():
    results = (DOCS / "reports" / "containing_loop.md").read_text()
    quoted = {
        BM25_TRADE_OFF: 0,
        DENSE_TRADE_OFF: 0,
        DENSE_HOTPOTQA_2WIKI_TRADE_OFF: 0,
        DENSE_HOTPOTQA_MUSIQUE_TRADE_OFF: 0,
    }
    for file, sets, start in DIRECTIONS.values():
        bullet = _bullet(results, start)
        report = (DOCS / "reports" / "containment" / file).read_text()
        for name in sets:
            part = report[report.index(f"## {name}") :]
            row = _report_row(part, "loop_rerank_calibrated, pair_budget=25")
            assert row[0] in bullet, (file, name, row[0])
            quoted[start] += 1
    assert quoted == {
        BM25_TRADE_OFF: 9,
        DENSE_TRADE_OFF: 4,
        DENSE_HOTPOTQA_2WIKI_TRADE_OFF: 2,
        DENSE_HOTPOTQA_MUSIQUE_TRADE_OFF: 3,
    }


# The left-out set behind each report's --target-pseudo choice, as the docs name it, and the bullet
# that quotes it.
BM25_PSEUDO = "- **What `adapt` would have chosen on the left-out corpus**"
PSEUDO_TARGETS = {
    "bm25_2wikimultihopqa+musique.md": ("HotpotQA's", BM25_PSEUDO),
    "bm25_hotpotqa+2wikimultihopqa.md": ("MuSiQue's", BM25_PSEUDO),
    "bm25_hotpotqa+musique.md": ("2Wiki's", BM25_PSEUDO),
    "dense_2wikimultihopqa+musique.md": ("HotpotQA's", "- **What `adapt` would have chosen, dense**"),
    "dense_hotpotqa+2wikimultihopqa.md": (
        "MuSiQue's",
        "- **What `adapt` would have chosen, dense, MuSiQue left out**",
    ),
    "dense_hotpotqa+musique.md": ("2Wiki's", "- **What `adapt` would have chosen, dense, 2Wiki left out**"),
}


def test_the_pseudo_question_choices_quoted_are_the_reports():
    results = (DOCS / "reports" / "containing_loop.md").read_text()
    for file, (target, start) in PSEUDO_TARGETS.items():
        bullet = _bullet(results, start)
        report = (DOCS / "reports" / "containment" / file).read_text()
        assert "--target-pseudo" in report.splitlines()[2], file
        part = report[report.index("(chosen by `adapt`'s pseudo-questions") :]
        score = {
            m: _report_row(part, m)[-1] for m in ("labeler_rerank", "loop", "**loop_rerank_calibrated**")
        }
        assert "| **loop_rerank_calibrated** |" in part.split("## ")[0], file
        want = (
            f"on {target}, {score['**loop_rerank_calibrated**']} (the loop {score['loop']}, "
            f"the reranker {score['labeler_rerank']})"
        )
        assert want in bullet, (file, want)
