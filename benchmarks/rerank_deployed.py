"""The rerankers as a user would deploy them, read on the dev sets of the 24-set comparison.

``retrieval_rerank.py`` chooses each reranker row's fusion with the search's order on the training
files' validation questions (``rerank_fusion.py``). A user deploys one reranker per corpus, so on
each dev set this module runs the one that validation would hand them, fused as chosen:

- in domain, the row whose chosen fusion scores highest on that set's own validation questions, or
  the search's own order where it scores higher than every row;
- on a left-out set, where no question of the set may choose, the row (or the search itself) and
  fusion chosen on the pseudo-validation questions mined from its corpus (``rerank_pseudo.py``; the
  open-domain set follows 2Wiki's rule).

It is read at the loop's own chunk count, taken from the committed dev report of the same search
and training files (``docs/reports/rerank/<search>/<train>_to_*.md``), with the search's own order
beside it and the paired gap between the two. The loop is not run again: its row is the committed
report's, and the search's own order, run here, must match that report's or the comparison stops.
The paired interval is read at the loop's chunk count too, each question's scores linear between
the cut-offs around it, so its gap is the one the table shows.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from paired_gap import Row, Side, paired_rows, side_scores
from report_output import heading
from rerank_fusion import deployed_row
from rerank_methods import KS, SEARCH_ROW, rerankers
from rerank_tables import at_chunks, known_types, seconds_per_question
from retrieval_efficientrag import Pool

# The dev reports whose loop rows the deployed rerankers are read against.
REPORTS = Path(__file__).resolve().parents[1] / "docs" / "reports" / "rerank"
RESAMPLES = 10_000
# The deployed cell where validation kept no reranker.
NO_RERANKER = "no reranker (the search itself)"
# Where the search's own order run here and the committed report's may differ (rounding to 0.1).
MATCH_TOLERANCE = 0.051


@dataclass
class LoopSection:
    """One set of a committed dev report: the loop's chunk count and its at-chunk-count table."""

    report: str
    chunks: float
    # method (its "@<chunks>" suffix and bold dropped) -> recall, all-gold, answer recall, s/q
    rows: dict[str, tuple[float, ...]] = field(default_factory=dict)


def read_report(path: Path) -> list[tuple[str, LoopSection]]:
    """Each ``### <set>`` section of one committed dev report, in order."""
    sections: list[tuple[str, LoopSection]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        head = re.match(r"^### (.+) \(\d+ [a-z ]+, (?:in domain|left out)\)$", line)
        if head:
            sections.append((head[1], LoopSection(path.name, float("nan"))))
            continue
        chunks = re.match(r"^At EfficientRAG's own chunk count \(([\d.]+) per question\):$", line)
        if chunks and sections:
            sections[-1][1].chunks = float(chunks[1])
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if sections and len(cells) == 5 and re.fullmatch(r"[\d.]+", cells[-1]):
            method = re.sub(r" @[\d.]+$", "", cells[0].replace("**", ""))
            sections[-1][1].rows[method] = tuple(float(c) for c in cells[1:])
    return sections


def loop_sections(reports: Path, search: str, train_on: list[str]) -> dict[str, LoopSection]:
    """Set name -> its section in the committed dev reports of ``search`` trained on ``train_on``
    (a set in several reports: the first, once they agree).

    Raises:
        ValueError: Two reports that disagree on a set's chunk count or loop row, named by file.
    """
    found: dict[str, LoopSection] = {}
    for path in sorted((reports / search).glob(f"{'+'.join(train_on)}_to_*.md")):
        for name, section in read_report(path):
            first = found.setdefault(name, section)
            loop = (first.chunks, first.rows.get("EfficientRAG", ())[:2])
            if loop != (section.chunks, section.rows.get("EfficientRAG", ())[:2]):
                raise ValueError(
                    f"{first.report} and {section.report}: the loop's row on {name} differs"
                    f" (chunks {first.chunks} against {section.chunks}); one of them is stale"
                )
    return found


@dataclass
class DeployedSet:
    """One dev set's reading: the loop's committed row, the search's order and the deployed row."""

    name: str
    row: str
    fusion: str
    section: LoopSection
    n: int
    search: dict[str, float]  # at the loop's chunk count, in %
    reranker: dict[str, float]
    gap: Row  # the reranker minus the search's order, on all questions
    seconds: float
    pairs: int


def evaluate_set(
    args: argparse.Namespace,
    name: str,
    pool: Pool,
    dataset: str,
    row: tuple[str, str],
    models: Path,
    reranker: Path,
    section: LoopSection,
    out: Path,
) -> DeployedSet:
    """The search's own order and the deployed ``row`` (name, fusion) on every question of ``pool``,
    each run cached under ``out`` in the folder ``retrieval_rerank.py``'s dev runs use.

    Raises:
        ValueError: The search's own order here differs from the committed report's, so the report's
            loop row was made from other inputs.
    """
    from efficientrag.baselines.direct_r import DirectRetrieval
    from efficientrag.eval.job_runs import evaluate_ranked_run

    progress = not args.quiet
    search_order = DirectRetrieval.ranking(pool.retriever, KS)
    search = evaluate_ranked_run(search_order, pool.examples, out / "direct_r_k", ks=KS, progress=progress)
    if row[0] == SEARCH_ROW:  # validation kept no reranker: the search is what is deployed
        folder, ranked = "direct_r_k", search
    else:
        method, folder = rerankers(pool, models, reranker, {row[0]: row[1]}, only=[row[0]])[row[0]]
        ranked = evaluate_ranked_run(method, pool.examples, out / folder, ks=KS, progress=progress)
    at = {key: at_chunks(s["retrieval"], section.chunks) for key, s in (("search", search), ("row", ranked))}
    committed = section.rows.get("Direct-R")
    here = (at["search"]["recall"], at["search"]["all_gold"])  # a summary's means are in %
    if committed is None or any(
        abs(a - b) > MATCH_TOLERANCE for a, b in zip(here, committed[:2], strict=False)
    ):
        raise ValueError(
            f"{section.report}, set {name}: the search's own order reads {here[0]:.1f} / {here[1]:.1f}"
            f" here against {committed[:2] if committed else 'no Direct-R row'} in the report; its loop"
            " row was made from other inputs"
        )
    types = known_types(args.shared_data, dataset)
    gap = paired_rows(
        per_question_at(out / folder, section.chunks),
        per_question_at(out / "direct_r_k", section.chunks),
        types,
        resamples=RESAMPLES,
        seed=0,
    )[0]
    return DeployedSet(
        name=name,
        row=row[0],
        fusion=row[1],
        section=section,
        n=len(pool.examples),
        search=at["search"],
        reranker=at["row"],
        gap=gap,
        seconds=seconds_per_question(ranked),
        pairs=int(row[0].rsplit("N=", 1)[1]) if row[0] != SEARCH_ROW else 0,
    )


def per_question_at(run: Path, chunks: float) -> dict[str, dict[str, Any]]:
    """A ranked run's per-question scores read at ``chunks``, linear between the cut-offs around it
    as the means are (``rerank_tables.at_chunks``), so the paired gap is the gap the table shows."""
    low, high = max(k for k in KS if k <= chunks), min(k for k in KS if k >= chunks)
    below, above = side_scores(Side(run, low)), side_scores(Side(run, high))
    w = 0.0 if high == low else (chunks - low) / (high - low)
    return {
        qid: {
            "type": row["type"],
            **{m: row[m] + w * (above[qid][m] - row[m]) for m in ("recall", "all_gold", "chunks")},
        }
        for qid, row in below.items()
    }


def _pct(scores: Mapping[str, float]) -> str:
    return f"{scores['recall']:.1f} / {scores['all_gold']:.1f}"


def _gap(g: Any) -> str:
    return f"{100 * g.mean:+.1f} [{100 * g.low:+.1f}, {100 * g.high:+.1f}]"


def table(sets: list[DeployedSet]) -> list[str]:
    """The report's table: per dev set, the loop's committed row, the search's own order and the
    deployed reranker at the loop's chunk count, the paired gap and the reranker's cost."""
    lines = [
        "| set | n | loop's chunks | EfficientRAG (committed) | the search's own order | deployed reranker "
        "| its recall / all-gold | gap to the search: recall / all-gold | s/q | pairs/q |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sets:
        loop = s.section.rows["EfficientRAG"]
        fused = "fused" if s.fusion == "rrf" else "alone"
        deployed = NO_RERANKER if s.row == SEARCH_ROW else f"{s.row}, {fused}"
        lines.append(
            f"| {s.name} | {s.n} | {s.section.chunks:.2f} | {loop[0]:.1f} / {loop[1]:.1f} | {_pct(s.search)} "
            f"| {deployed} | {_pct(s.reranker)} | {_gap(s.gap.recall_gap)} / "
            f"{_gap(s.gap.all_gold_gap)} | {s.seconds:.2f} | {s.pairs} |"
        )
    return lines


def write_report(
    args: argparse.Namespace,
    work: Path,
    train_on: list[str],
    dev_sets: Mapping[str, tuple[str, Pool, Path]],
    models: Path,
    reranker: Path,
    validation: Mapping[str, Any],
    command: str,
    t0: float,
) -> str:
    """Every dev set the committed reports have, read as :func:`evaluate_set` does; the report is
    written to ``rerank-deployed-<training files>.md`` (and ``.json``) in ``work``.

    Args:
        args: The benchmark's arguments (``--retriever``, ``--loop-reports``, ``--quiet``, ``--shared-data``).
        work: The search's work folder.
        train_on: The direction's training files.
        dev_sets: Set name -> its dataset, pool and run folder.
        models: The direction's models folder.
        reranker: The cross-encoder's folder.
        validation: ``rerank_fusion.deployed_rerankers``' scores (``fusion``, ``fusion_validation``).
        command: The command line, for the report.
        t0: ``time.perf_counter()`` at the start, for the report's minutes.
    """
    sections = loop_sections(Path(args.loop_reports), args.retriever, train_on)
    fusion, by_file = validation["fusion"], validation["fusion_validation"]
    sets, missing = [], []
    for name, (dataset, pool, out) in dev_sets.items():
        if name not in sections:
            missing.append(name)
            continue
        row = deployed_row(dataset, train_on, fusion, by_file, validation.get("pseudo", {}))
        sets.append(evaluate_set(args, name, pool, dataset, row, models, reranker, sections[name], out))
    if not sets:
        raise ValueError(
            f"no committed dev report in {args.loop_reports}/{args.retriever} for training files"
            f" {'+'.join(train_on)} has any of {sorted(dev_sets)}; run retrieval_rerank.py without"
            " --deployed-only first"
        )
    minutes = (time.perf_counter() - t0) / 60
    lines = [
        *heading(
            f"## Rerankers as deployed, on dev questions (search: {args.retriever}; trained on {', '.join(train_on)})",
            command,
            minutes,
        ),
        "On each set, what validation hands a user: in domain the best on the set's own validation"
        " questions of the reranker rows (each fused with the search's order as the training files'"
        " validation questions chose) and the search's own order; on a left-out set the row and fusion,"
        " or the search itself, that scored best on the pseudo-validation questions mined from its"
        " corpus (no question of the set read). Read at the loop's own"
        " chunk count from the committed dev report (the loop not run again; the search's own order,"
        " run here, matches the report's). Recall / all-gold in %; the gap is the reranker minus the"
        " search's own order, paired question by question at that count (each question's scores"
        f" linear between the cut-offs around it), 95% interval ({RESAMPLES:,} resamples); s/q: the reranker run's own stage timings; pairs/q: the model pairs it scores"
        " a question.",
        "",
        *table(sets),
    ]
    if missing:
        lines += ["", f"Not in the committed dev reports, so not read: {', '.join(missing)}."]
    tag = "+".join(train_on)
    (work / f"rerank-deployed-{tag}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = {
        s.name: {
            "row": s.row,
            "fusion": s.fusion,
            "chunks": s.section.chunks,
            "report": s.section.report,
            "search": s.search,
            "reranker": s.reranker,
            "gap": {"recall": asdict(s.gap.recall_gap), "all_gold": asdict(s.gap.all_gold_gap)},
            "seconds": s.seconds,
            "pairs": s.pairs,
        }
        for s in sets
    }
    (work / f"rerank-deployed-{tag}.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return "\n".join(lines)
