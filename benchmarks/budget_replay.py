"""Choose the chunk budget's last step on validation traces, with no model run again.

Under ``budget_policy="best"`` or ``"rerank"`` the loop's hops never depend on ``chunk_budget``,
``budget_policy``, ``fill_budget``, ``fill_from``, ``rank_weight`` or ``hop_calibration``: they decide only which of the judged chunks a question returns
(``efficientrag.pipeline.budget``). This script replays that choice from the traces of loop runs
already made, for every variant of ``benchmarks/retrieval_rerank.py`` that changes nothing else;
chooses on the validation runs by the protocol score (mean over files of (recall + all-gold) / 2;
ties go to the run's own setting, then to the first variant listed); and prints each variant on the
dev runs beside. Before it replays anything it replays each run's own setting and refuses a run
where that does not give back every record's recorded chunks, in order.

    python benchmarks/budget_replay.py --validation VAL_RUN [VAL_RUN ...] --dev DEV_RUN [DEV_RUN ...]

Each RUN is a loop run folder (predictions.jsonl with traces, run.json), e.g. those of
retrieval_rerank.py under WORK/<search>/models/<train sets>/{validation,dev}/<set>/<setting>.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from report_output import command_line
from retrieval_rerank import LOOP_VARIANTS

from efficientrag.config import parse_override
from efficientrag.config_values import from_dict
from efficientrag.jsonl import read_jsonl
from efficientrag.pipeline.budget import REPLAYABLE_SETTINGS, Judgements, choose_chunks, judgements_from_trace
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.metrics import all_gold, oracle_recall, protocol_score

# The variants of retrieval_rerank.py a replay can give: every key among the budget's own.
VARIANTS = {
    name: changes
    for name, changes in LOOP_VARIANTS.items()
    if all(c.split("=", 1)[0] in REPLAYABLE_SETTINGS for c in changes)
}


@dataclasses.dataclass
class RecordedRun:
    """A loop run read back: its folder, its own setting, and each record's gold, chunks and choice inputs."""

    folder: Path
    config: EfficientRAGConfig
    run_id: str  # run.json's id: the digest of the run's fingerprint
    models: dict[str, str]  # the models' content digests, from the fingerprint
    records: list[tuple[list[str], Judgements]]  # each record's gold ids and what its budget chose from


def read_run(folder: Path) -> RecordedRun:
    """A run folder's setting and records; refuses a run a replay cannot stand for.

    Args:
        folder: A loop run folder (run.json, predictions.jsonl with traces).

    Returns:
        The run.

    Raises:
        ValueError: No EfficientRAG setting in run.json, a budget the loop stopped for, a record
            without its trace, or a record whose own setting does not replay to its chunks.
    """
    run_json = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    settings = run_json.get("fingerprint", {}).get("settings", {}).get("efficientrag")
    if settings is None:
        raise ValueError(f"{folder / 'run.json'}: fingerprint.settings.efficientrag missing; not a loop run")
    cfg = from_dict(EfficientRAGConfig, settings, origin=str(folder / "run.json"))
    if cfg.chunk_budget is not None and cfg.budget_policy == "first":
        raise ValueError(
            f"{folder}: budget_policy={cfg.budget_policy!r} stops the loop at its budget, so its hops "
            "depend on the budget and a replay cannot stand for another; replay runs made with 'best' "
            "or 'rerank'"
        )
    records = []
    for n, rec in enumerate(read_jsonl(folder / "predictions.jsonl"), 1):
        where = f"{folder / 'predictions.jsonl'} record {n} (id {rec.get('id')!r})"
        if "trace" not in rec or "hops" not in (rec["trace"] or {}):
            raise ValueError(f"{where}: field 'trace.hops' missing; run the loop with its trace kept")
        judgements = judgements_from_trace(rec["trace"]["hops"], where=where)
        replayed = [cid for cid, _ in choose_chunks(judgements, cfg)[0]]
        if replayed != rec["retrieved_ids"]:
            raise ValueError(
                f"{where}: its own setting replays to {replayed}, not the recorded {rec['retrieved_ids']}; "
                "the trace does not hold what the loop chose from"
            )
        records.append((list(rec["gold_chunk_ids"]), judgements))
    if not records:
        raise ValueError(f"{folder / 'predictions.jsonl'}: no records")
    fingerprint = run_json["fingerprint"]
    return RecordedRun(folder, cfg, str(run_json.get("id")), dict(fingerprint.get("models", {})), records)


def with_changes(cfg: EfficientRAGConfig, changes: Sequence[str]) -> EfficientRAGConfig:
    """``cfg`` with ``key=value`` changes, each among ``REPLAYABLE_SETTINGS`` (checked by the config itself).

    Args:
        cfg: The run's own setting.
        changes: ``key=value`` items.

    Returns:
        The changed setting.
    """
    parsed = dict(parse_override(c) for c in changes)
    other = sorted(set(parsed) - set(REPLAYABLE_SETTINGS))
    if other:
        raise ValueError(
            f"{other[0]!r} changes the loop's hops; a replay may change only {', '.join(REPLAYABLE_SETTINGS)}"
        )
    changed = dataclasses.replace(cfg, **parsed)
    if changed.chunk_budget is not None and changed.budget_policy == "first":
        raise ValueError(
            f"{', '.join(changes)}: a budget under budget_policy={changed.budget_policy!r} would stop the "
            "loop's hops; a replay stands only for budget_policy='best' or 'rerank'"
        )
    return changed


def replay(run: RecordedRun, cfg: EfficientRAGConfig) -> dict[str, float]:
    """Recall and all-gold (in %) and chunks per question of ``run`` under ``cfg``'s budget.

    Args:
        run: The recorded run.
        cfg: The setting to replay (the run's own, changed only in ``REPLAYABLE_SETTINGS`` keys).

    Returns:
        ``{"recall", "all_gold", "num_chunks"}``.
    """
    recall = gold = chunks = 0.0
    for gold_ids, judgements in run.records:
        kept = [cid for cid, _ in choose_chunks(judgements, cfg)[0]]
        recall += oracle_recall(kept, gold_ids)
        gold += all_gold(kept, gold_ids)
        chunks += len(kept)
    n = len(run.records)
    return {"recall": 100 * recall / n, "all_gold": 100 * gold / n, "num_chunks": chunks / n}


def compare(
    validation: Sequence[RecordedRun], dev: Sequence[RecordedRun], variants: Mapping[str, Sequence[str]]
) -> tuple[dict[str, dict[str, Any]], str]:
    """Every variant replayed on every run, and the one the validation runs choose.

    Args:
        validation: Runs of one setting on the training files' validation questions.
        dev: Runs of the same setting on dev questions.
        variants: Name -> ``key=value`` changes; the runs' own setting is ``"recorded"``.

    Returns:
        Per variant ``{"validation": [...], "dev": [...], "score": protocol score}``, and the chosen name.
    """
    runs = [*validation, *dev]
    made = {json.dumps([dataclasses.asdict(r.config), r.models], sort_keys=True) for r in runs}
    if len(made) > 1:
        names = ", ".join(sorted({f"{r.folder.parent.name}/{r.folder.name}" for r in runs}))
        raise ValueError(
            f"the runs hold different settings or models; replay runs of one setting and models: {names}"
        )
    out: dict[str, dict[str, Any]] = {}
    for name, changes in {"recorded": [], **variants}.items():
        val = [replay(r, with_changes(r.config, changes)) for r in validation]
        out[name] = {
            "validation": val,
            "dev": [replay(r, with_changes(r.config, changes)) for r in dev],
            "score": protocol_score({str(i): v for i, v in enumerate(val)}),
        }
    chosen = max(out, key=lambda n: out[n]["score"])  # the first of equal scores
    return out, chosen


def render(
    results: Mapping[str, Mapping[str, Any]],
    chosen: str,
    validation: Sequence[RecordedRun],
    dev: Sequence[RecordedRun],
    variants: Mapping[str, Sequence[str]],
    command: str,
) -> str:
    """The table: a row per variant, validation columns, the protocol score, then dev columns."""

    def name(r: RecordedRun) -> str:
        return f"{r.folder.parent.name} ({len(r.records)} q)"

    head = [*(f"validation {name(r)}" for r in validation), "score", *(f"dev {name(r)}" for r in dev)]
    lines = [
        "## The chunk budget's last step, replayed from the runs' traces",
        "",
        f"Command: `{command}`",
        "",
        f"Runs' own setting: `{validation[0].folder.name}`. Recall / all-gold (chunks); score = the "
        "protocol's, on validation only; **bold**: chosen.",
        "",
        "Models: "
        + ", ".join(f"{k} `{v}`" for k, v in sorted(validation[0].models.items()))
        + ". Runs: "
        + ", ".join(f"{r.folder.parent.name} `{r.run_id}`" for r in [*validation, *dev])
        + ".",
        "",
        "| variant | " + " | ".join(head) + " |",
        "|---|" + "---|" * len(head),
    ]
    for v, res in results.items():
        label = v if v == "recorded" else f"{v}: `{','.join(variants[v])}`"
        cells = [
            f"{s['recall']:.1f} / {s['all_gold']:.1f} ({s['num_chunks']:.2f})" for s in res["validation"]
        ]
        cells.append(f"{res['score']:.2f}")
        cells += [f"{s['recall']:.1f} / {s['all_gold']:.1f} ({s['num_chunks']:.2f})" for s in res["dev"]]
        lines.append(f"| {f'**{label}**' if v == chosen else label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--validation", type=Path, nargs="+", required=True, help="loop runs on validation questions"
    )
    parser.add_argument(
        "--dev", type=Path, nargs="*", default=[], help="runs of the same setting on dev questions"
    )
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    try:
        validation = [read_run(f) for f in args.validation]
        dev = [read_run(f) for f in args.dev]
        variants = {v: VARIANTS[v] for v in args.variants}
        results, chosen = compare(validation, dev, variants)
    except (OSError, ValueError) as err:
        print(f"budget_replay: {err}", file=sys.stderr)
        return 2
    command = command_line(__file__, argv)
    print(render(results, chosen, validation, dev, variants, command.strip()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
