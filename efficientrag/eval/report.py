"""One Markdown report over several evaluation runs, with the papers' numbers alongside.

:func:`write_report` reads each run folder's ``summary.json`` (and ``config.yaml`` when the CLI
saved one) and writes ``report.md`` (quality, retrieval and cost tables, the split, and the metric
definitions under the tables), ``report.json`` (the same rows as data) and two plots.

Runs are matched to published rows by method and variant (see
:mod:`efficientrag.eval.paper_numbers`): Direct-R by its cut-off (``@10``), Iter-RetGen by its
number of iterations (a 3-iteration run also reports iteration 2 through its ``iter2`` view).
Answers that did not come from a real model (a scripted test server) are marked in every table
that shows them: pass ``qa_source_note``, or put ``qa_source`` in a run's summary meta.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from efficientrag.atomic import write_text_atomic
from efficientrag.baselines.cost import latency_s
from efficientrag.baselines.registry import METHODS
from efficientrag.errors import InvalidArgumentError, MissingFileError
from efficientrag.eval.paper_numbers import PaperNumber, all_numbers, lookup
from efficientrag.eval.paper_numbers.dragin import model_variant
from efficientrag.eval.plots import Point, plot_quality_vs_calls, plot_recall_vs_chunks
from efficientrag.eval.scoring import ALL
from efficientrag.eval.tables import fmt
from efficientrag.experiment.run_binding import fingerprint_id, read_fingerprint

MARK = "†"
QA_SUFFIX = "_qa"
PLOT_QUALITY = "quality_vs_llm_calls.png"
PLOT_RECALL = "recall_vs_chunks.png"

METRIC_NOTES = """\
**Metrics.** Answers and gold answers are compared after SQuAD normalization (lowercase, no
punctuation, no articles), taking the best over the gold answer's aliases.
*EM*: exact match. *F1*: token-overlap F1; a yes/no answer scores only by exact match (HotpotQA's
official rule). *contained*: the normalized prediction is a substring of a normalized gold answer;
this is what the EfficientRAG code computes as "EM", so the paper's EM column is shown next to
ours as "contained" (an empty prediction is wrong here; the official code counts it as contained in
every answer). *Acc*: an LLM
judge says whether the prediction means the gold answer (blank when no judge ran).
*recall*: share of a question's gold (supporting) chunks among the unique retrieved chunks
(EfficientRAG's oracle-chunk recall), averaged over questions; *all-gold*: share of questions with
every gold chunk retrieved; *K*: retrieved chunks per question, unique and counting a chunk
retrieved again in a later round; *answer recall*: some retrieved chunk contains a gold answer
string (FlashRAG's recall@k). *LLM calls*, *tokens* (prompt + completion, as the server or model
reports them) and *retrieval calls* (one per query) are exact per question; *latency* is wall
time per question with batched calls shared among the questions of the batch (so it is lower
than one question's latency alone). Percentages throughout except K, counts and seconds."""

PAPER_NOTES = """\
**Paper columns.** Published numbers of the same method, dataset and variant (EfficientRAG
Tables 2-4: Llama-3-8B-Instruct, Contriever-MSMARCO, each dataset's full dev set pooled into its
own corpus; Table 4 is 200 MuSiQue questions on a GPU). They are a reference, not a target: the
split, retriever, generator, prompts and judge of a run here may differ (see the runs list)."""


@dataclass
class Run:
    path: Path
    summary: dict[str, Any]
    config: dict[str, Any] | None
    method: str
    label: str
    dataset: str
    qa_source: str | None
    # The inputs its predictions were made under (run.json); None for runs written without one.
    fingerprint: dict[str, Any] | None = None


@dataclass
class Row:
    run: Run
    label: str
    variant: str
    values: dict[str, Any]
    paper: dict[str, PaperNumber] = field(default_factory=dict)


def load_run(path: str | Path) -> Run:
    path = Path(path)
    summary_path = path / "summary.json"
    if not summary_path.is_file():
        raise MissingFileError(f"{path}: no summary.json (run `efficientrag eval` for this folder first)")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    config = None
    if (path / "config.yaml").is_file():
        config = yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8")) or None
    fingerprint = read_fingerprint(path)
    recorded = summary.get("fingerprint_id")
    if fingerprint is not None and recorded and recorded != fingerprint_id(fingerprint):
        raise InvalidArgumentError(
            f"{path}: summary.json was written under other inputs than run.json records "
            "(an interrupted rerun?); run the same `efficientrag eval` command again to rebuild it"
        )
    method = str(summary.get("method") or path.name)
    base = method[: -len(QA_SUFFIX)] if method.endswith(QA_SUFFIX) else method
    dataset = str(summary.get("dataset") or _cfg(config, "data", "dataset") or "")
    return Run(
        path=path,
        summary=summary,
        config=config,
        method=base,
        label=str(summary.get("label") or method),
        dataset=_canonical_dataset(dataset),
        qa_source=summary.get("qa_source"),
        fingerprint=fingerprint,
    )


def write_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    title: str,
    qa_source_note: str | None = None,
) -> Path:
    """Write ``report.md`` (+ ``report.json`` and plots) to ``out_dir``; returns the Markdown path.

    Args:
        run_dirs: Evaluation run folders (each with its ``summary.json``), in report order.
        out_dir: Where the report goes (created if needed).
        title: The report's heading.
        qa_source_note: Says the answers did not come from a real model (a scripted test
            server): a warning above the tables, and every run's QA numbers are marked (a run can
            also carry ``qa_source`` in its summary meta).

    Returns:
        The path of ``report.md``.

    Raises:
        ValueError: No run folder was given.
    """
    if not run_dirs:
        raise InvalidArgumentError("write_report needs at least one run folder")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = [load_run(p) for p in run_dirs]
    numbers = all_numbers()
    quality, retrieval, cost = _quality_rows(runs), _retrieval_rows(runs), _cost_rows(runs)
    for rows, metrics in (
        (quality, ("em", "contained", "f1", "acc")),
        (retrieval, ("recall", "num_chunks")),
        (cost, ("llm_calls", "latency_s", "retrieval_calls")),
    ):
        _attach_paper(rows, metrics, numbers)
    marked = {id(r) for r in runs if qa_source_note or r.qa_source}

    lines = [f"# {title}", ""]
    if qa_source_note or any(r.qa_source for r in runs):
        lines += [_qa_warning(runs, qa_source_note), ""]
    lines += ["## Runs", "", *_runs_list(runs), ""]
    mixed = _mixed_inputs(runs)
    if mixed:
        lines += [mixed, ""]
    lines += ["## Answer quality", ""]
    lines += _quality_table(quality, marked) if quality else ["No run in this report produced answers.", ""]
    lines += ["## Retrieval", ""]
    lines += _retrieval_table(retrieval) if retrieval else ["No run in this report retrieved.", ""]
    lines += ["## Cost per question", "", *_cost_table(cost, marked), ""]
    lines += [f"![quality vs LLM calls]({PLOT_QUALITY})", "", f"![recall vs chunks]({PLOT_RECALL})", ""]
    lines += [_split_note(runs), "", METRIC_NOTES, "", PAPER_NOTES, ""]
    md_path = out / "report.md"
    write_text_atomic(md_path, "\n".join(lines))

    _plots(runs, quality, retrieval, cost, numbers, out)
    report = {
        "title": title,
        "qa_source_note": qa_source_note,
        "quality": [_row_json(r) for r in quality],
        "retrieval": [_row_json(r) for r in retrieval],
        "cost": [_row_json(r) for r in cost],
    }
    write_text_atomic(out / "report.json", json.dumps(report, indent=2))
    return md_path


# -- rows ----------------------------------------------------------------------------------------


def _quality_rows(runs: Sequence[Run]) -> list[Row]:
    rows = []
    for run in runs:
        qa = run.summary.get("qa")
        if qa:
            label = run.label
            if run.method == "direct_r":
                label = f"{run.label} (answer from top {_direct_r_answer_k(run)})"
            rows.append(Row(run, label, _main_variant(run), dict(qa)))
        rows.extend(_view_rows(run, "qa"))
    return rows


def _retrieval_rows(runs: Sequence[Run]) -> list[Row]:
    rows = []
    for run in runs:
        for cut, agg in (run.summary.get("retrieval") or {}).items():
            if cut == ALL:
                rows.append(Row(run, run.label, _main_variant(run), dict(agg)))
            else:
                rows.append(Row(run, f"{run.label}@{cut}", f"@{cut}", dict(agg)))
        rows.extend(_view_rows(run, "retrieval"))
    return rows


def _view_rows(run: Run, section: str) -> list[Row]:
    views = (run.summary.get("views") or {}).items()
    return [
        Row(run, f"{run.label}[{v}]", _view_variant(v), dict(d[section])) for v, d in views if d.get(section)
    ]


def _cost_rows(runs: Sequence[Run]) -> list[Row]:
    rows = []
    for run in runs:
        c = run.summary.get("counters_mean") or {}
        values = {
            "n": run.summary.get("n", 0),
            "llm_calls": c.get("llm_calls", 0.0),
            "prompt_tokens": c.get("prompt_tokens", 0.0),
            "completion_tokens": c.get("completion_tokens", 0.0),
            "retrieval_calls": c.get("retrieval_calls", 0.0),
            "latency_s": latency_s(c),
        }
        variant = f"@{_direct_r_answer_k(run)}" if run.method == "direct_r" else _main_variant(run)
        rows.append(Row(run, run.label, variant, values))
    return rows


def _main_variant(run: Run) -> str:
    if run.method == "direct_r":
        return f"@{_direct_r_answer_k(run)}"
    if run.method == "iter_retgen":
        iterations = _cfg(run.config, "baselines", "iter_retgen", "iterations")
        if iterations is None:
            iterations = (run.summary.get("counters_mean") or {}).get("iterations")
        return f"iter{round(float(iterations))}" if iterations else ""
    if run.method in ACTIVE_METHODS:
        # DRAGIN's tables are per generator model; FLARE's rows use the empty variant, which is
        # also what a model the papers did not use falls back to.
        model = _cfg(run.config, "generator", "hf", "model") or _cfg(
            run.config, "generator", "openai", "llm", "model"
        )
        return model_variant(str(model or ""))
    return ""


# Methods whose paper numbers depend on the generator model (the active ones: FLARE, DRAGIN ...).
ACTIVE_METHODS = frozenset(name for name, cls in METHODS.items() if cls.paper_rows_per_model)


def _view_variant(view: str) -> str:
    return view if view.startswith("iter") and view[4:].isdigit() else f"view:{view}"


def _direct_r_answer_k(run: Run) -> int:
    k = _cfg(run.config, "baselines", "direct_r", "top_k")
    return int(k) if k is not None else 10


def _attach_paper(rows: Sequence[Row], metrics: Sequence[str], numbers: Sequence[PaperNumber]) -> None:
    for row in rows:
        for metric in metrics:
            found = lookup(row.run.method, row.variant, row.run.dataset, metric, numbers)
            if found is not None:
                row.paper[metric] = found


# -- tables --------------------------------------------------------------------------------------


def _marker(row: Row, marked: set[int]) -> str:
    return f" {MARK}" if id(row.run) in marked else ""


def _paper_cell(row: Row, metrics: Sequence[str], digits: int = 2) -> str:
    if not row.paper:
        return ""
    return " / ".join(fmt(row.paper[m].value, digits) if m in row.paper else "–" for m in metrics)


def _quality_table(rows: Sequence[Row], marked: set[int]) -> list[str]:
    lines = [
        "| method | dataset | n | EM | F1 | contained | Acc | paper EM / contained / F1 / Acc |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        v = r.values
        lines.append(
            f"| {r.label}{_marker(r, marked)} | {r.run.dataset} | {v.get('n', '')} | {fmt(v.get('em'))} | "
            f"{fmt(v.get('f1'))} | {fmt(v.get('contained'))} | {fmt(v.get('acc'))} | "
            f"{_paper_cell(r, ('em', 'contained', 'f1', 'acc'))} |"
        )
    return [*lines, ""]


def _retrieval_table(rows: Sequence[Row]) -> list[str]:
    lines = [
        "| method | dataset | n | recall | all-gold | K | K with repeats | answer recall | paper recall / K |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        v = r.values
        lines.append(
            f"| {r.label} | {r.run.dataset} | {v.get('n', '')} | {fmt(v.get('recall'))} | {fmt(v.get('all_gold'))} | "
            f"{fmt(v.get('num_chunks'))} | {fmt(v.get('num_chunks_with_dups'))} | {fmt(v.get('answer_recall'))} | "
            f"{_paper_cell(r, ('recall', 'num_chunks'))} |"
        )
    return [*lines, ""]


def _cost_table(rows: Sequence[Row], marked: set[int]) -> list[str]:
    lines = [
        "| method | dataset | n | LLM calls | prompt tokens | completion tokens | retrieval calls | latency s "
        "| paper LLM calls / latency s / retrieval calls |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        v = r.values
        lines.append(
            f"| {r.label}{_marker(r, marked)} | {r.run.dataset} | {v['n']} | {fmt(v['llm_calls'])} | {fmt(v['prompt_tokens'], 1)} | "
            f"{fmt(v['completion_tokens'], 1)} | {fmt(v['retrieval_calls'])} | {fmt(v['latency_s'], 3)} | "
            f"{_paper_cell(r, ('llm_calls', 'latency_s', 'retrieval_calls'))} |"
        )
    return lines


def _qa_warning(runs: Sequence[Run], note: str | None) -> str:
    parts = [note] if note else []
    for source, labels in _group((run.qa_source, run.label) for run in runs if run.qa_source):
        parts.append(f"{', '.join(f'`{label}`' for label in labels)}: {source}.")
    parts.append(
        f"In rows marked {MARK}, EM, F1, contained, Acc, LLM calls and tokens measure the harness, "
        "not a language model; retrieval numbers are real."
    )
    return f"> **{MARK} Answers not from a real model.** " + " ".join(parts)


def _group(pairs: Any) -> list[tuple[str, list[str]]]:
    """(key, [labels]) in first-seen order: one line per distinct key instead of one per run."""
    groups: dict[str, list[str]] = {}
    for key, label in pairs:
        groups.setdefault(key, []).append(label)
    return list(groups.items())


def _runs_list(runs: Sequence[Run]) -> list[str]:
    lines = []
    for run in runs:
        gen = _generator_desc(run.config)
        retr = _retriever_desc(run.config)
        inputs = f"inputs `{fingerprint_id(run.fingerprint)}`" if run.fingerprint else "inputs not recorded"
        extra = "; ".join(x for x in (gen, retr, inputs) if x)
        lines.append(
            f"- `{run.label}` ({run.dataset or 'dataset ?'}, {run.summary.get('n', 0)} questions"
            f"{', ' + str(run.summary.get('num_failed')) + ' failed' if run.summary.get('num_failed') else ''})"
            f"{': ' + extra if extra else ''} — `{run.path}`"
        )
    return lines


def _mixed_inputs(runs: Sequence[Run]) -> str:
    """Runs of one dataset evaluated on different question sets are not one comparison: say so."""
    by_dataset: dict[str, dict[str, list[str]]] = {}
    for run in runs:
        data = (run.fingerprint or {}).get("data")
        if data:
            by_dataset.setdefault(run.dataset, {}).setdefault(str(data), []).append(run.label)
    notes = []
    for dataset, groups in by_dataset.items():
        if len(groups) > 1:
            sets = "; ".join(", ".join(f"`{label}`" for label in labels) for labels in groups.values())
            notes.append(f"{dataset or 'dataset ?'}: {len(groups)} different question sets ({sets})")
    if not notes:
        return ""
    return "**Not one comparison.** Runs below were evaluated on different data: " + "; ".join(notes) + "."


def _split_note(runs: Sequence[Run]) -> str:
    pairs = []
    for run in runs:
        path = _cfg(run.config, "data", "path") or run.summary.get("data_path")
        limit = _cfg(run.config, "eval", "limit")
        chunks = run.summary.get("corpus_chunks")
        where = f"`{path}`" if path else f"{run.dataset} (file not recorded)"
        desc = f"{where}, {run.summary.get('n', 0)} questions"
        desc += f" (eval.limit {limit})" if limit else ""
        desc += f", retrieval corpus of {chunks} chunks" if chunks else ""
        pairs.append((desc, run.label))
    return "**Split.** " + "; ".join(f"{', '.join(labels)}: {desc}" for desc, labels in _group(pairs)) + "."


def _generator_desc(config: dict[str, Any] | None) -> str:
    backend = _cfg(config, "generator", "backend")
    if backend == "openai":
        model = _cfg(config, "generator", "openai", "llm", "model")
        return f"generator openai:{model}"
    if backend == "hf":
        model = _cfg(config, "generator", "hf", "model")
        return f"generator hf:{model}" if model else ""
    return ""


def _retriever_desc(config: dict[str, Any] | None) -> str:
    from efficientrag.retrieval.factory import BACKENDS

    backend = BACKENDS.get(_cfg(config, "retriever", "kind"))
    return backend.describe((config or {}).get("retriever") or {}) if backend else ""


def _row_json(row: Row) -> dict[str, Any]:
    return {
        "label": row.label,
        "method": row.run.method,
        "variant": row.variant,
        "dataset": row.run.dataset,
        "run": str(row.run.path),
        "qa_source": row.run.qa_source,
        "values": row.values,
        "paper": {
            m: {"value": p.value, "source": p.source, "setting": p.setting} for m, p in row.paper.items()
        },
    }


# -- plots ---------------------------------------------------------------------------------------


def _plots(
    runs: Sequence[Run],
    quality: Sequence[Row],
    retrieval: Sequence[Row],
    cost: Sequence[Row],
    numbers: Sequence[PaperNumber],
    out: Path,
) -> None:
    calls = {id(r.run): r.values["llm_calls"] for r in cost}
    q_points = [
        Point(r.label, float(calls[id(r.run)]), float(r.values.get("f1", 0.0)))
        for r in quality
        if "[" not in r.label
    ]
    plot_quality_vs_calls(q_points, out / PLOT_QUALITY, metric="F1")
    curves: dict[str, list[tuple[float, float]]] = {}
    points = []
    for r in retrieval:
        xy = (float(r.values["num_chunks"]), float(r.values["recall"]))
        if r.variant.startswith("@") and r.run.summary.get("ranked"):
            curves.setdefault(r.run.label, []).append(xy)
        else:
            points.append(Point(r.label, *xy))
    datasets = {r.dataset for r in runs}
    paper_points = []
    for n in numbers:
        if n.metric != "recall" or n.dataset not in datasets:
            continue
        k = lookup(n.method, n.variant, n.dataset, "num_chunks", numbers)
        if k is not None:
            paper_points.append(
                Point(f"{n.method} {n.variant} ({n.dataset})".replace("  ", " "), k.value, n.value)
            )
    plot_recall_vs_chunks(curves, points, paper_points, out / PLOT_RECALL)


# -- helpers -------------------------------------------------------------------------------------


def _cfg(config: dict[str, Any] | None, *keys: str) -> Any:
    node: Any = config
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _canonical_dataset(name: str) -> str:
    if not name:
        return ""
    from efficientrag.data.readers.registry import canonical_dataset_name

    try:
        return canonical_dataset_name(name)
    except ValueError:
        return name
