"""What the early-exit benchmarks share (the Labeler's, ``early_exit.py`` and
``containment_protocol.py --early-exit``, and the cross-encoder's, ``cross_encoder_exit.py``):
where the heads are fit, the thresholds validation chooses from, what an exit cost in kept chunks,
and the loop's rows timed side by side. A public interface for those scripts; nothing here is
measured."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from efficientrag.adapt.exit_choice import ExitChoiceConfig
from efficientrag.eval.paired_bootstrap import paired_bootstrap
from efficientrag.eval.record_scores import mean
from efficientrag.eval.side_by_side import time_methods

Record = dict[str, Any]
TIMING_BATCH = 32  # questions per timed batch


def thresholds(text: str) -> list[float]:
    """``--thresholds``: comma-separated numbers in (0, 1], sorted and without repeats.

    Args:
        text: The option's value.

    Raises:
        argparse.ArgumentTypeError: Not numbers, or one outside (0, 1].
    """
    try:
        values = sorted({float(t) for t in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated numbers, got {text!r}") from None
    if not values or not all(0.0 < t <= 1.0 for t in values):
        raise argparse.ArgumentTypeError(f"thresholds must lie in (0, 1], got {text!r}")
    return values


def exit_arguments(parser: argparse.ArgumentParser, fit_world: str) -> None:
    """The heads' fit (rows, layers, quantile, the world whose pairs they also see) and the choice's
    candidates and tolerance.

    Args:
        parser: The script's parser (the options are added to it).
        fit_world: What the fit world's pairs are, for the help text.
    """
    parser.add_argument(
        "--rows",
        type=Path,
        default=Path("runs/quickstart/synth/labeler/train.jsonl"),
        help="Labeler rows to fit on",
    )
    parser.add_argument("--layers", default="2,4", help="the exit heads' layers")
    parser.add_argument("--quantile", type=float, default=0.9, help="the heads' upper quantile")
    parser.add_argument(
        "--fit-seed", type=int, default=3, help=f"the toy world whose {fit_world} the heads also fit"
    )
    threshold_argument(parser)
    parser.add_argument("--tolerance", type=float, default=1.0, help="validation points a threshold may cost")


def threshold_argument(parser: argparse.ArgumentParser) -> None:
    """``--thresholds``, by default the candidates ``adapt`` chooses from (``ExitChoiceConfig``).

    Args:
        parser: The script's parser (the option is added to it).
    """
    default = sorted({float(t) for t in ExitChoiceConfig().thresholds})
    parser.add_argument("--thresholds", type=thresholds, default=default, help="comma-separated, in (0, 1]")


def paired_cells(
    scores: Sequence[tuple[float, float]], ref: Sequence[tuple[float, float]], resamples: int = 10_000
) -> list[str]:
    """The paired recall and all-gold gaps (``scores`` minus ``ref``, per question), each with its
    95% interval and verdict.

    Args:
        scores: Per question (recall, all-gold).
        ref: The same questions' (recall, all-gold) of the reference row.
        resamples: Bootstrap resamples per interval.
    """
    return [
        paired_bootstrap([x for x, _ in scores], [x for x, _ in ref], resamples=resamples).cell(),
        paired_bootstrap([y for _, y in scores], [y for _, y in ref], resamples=resamples).cell(),
    ]


def threshold_table_head(thresholds: list[float], *leading: str) -> list[str]:
    """The head of a validation table with one column per threshold: the ``leading`` columns, full
    depth, each threshold, the one chosen.

    Args:
        thresholds: The candidate thresholds.
        leading: Columns before full depth (e.g. ``"method"``).
    """
    columns = [*leading, "full depth", *(f"exit < {t:g}" for t in thresholds), "chosen"]
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def kept_lost_early(full: Sequence[Record], early: Sequence[Record]) -> float:
    """The share (%) of the full-depth run's kept chunks that left early in the exit run and are
    not kept there: what the heads' error cost.

    Args:
        full: The full-depth run's records.
        early: The exit run's records, the same questions in the same order.
    """
    lost = total = 0
    for f, e in zip(full, early, strict=True):
        kept = set(f["retrieved_ids"])
        exited = {
            row["id"]
            for hop in e["trace"]["hops"]
            for hits in hop["hits"]
            for row in hits
            if row.get("exited_at") is not None
        }
        total += len(kept)
        lost += len((kept & exited) - set(e["retrieved_ids"]))
    return 100.0 * lost / max(1, total)


def pair_cell(records: Sequence[Record]) -> str:
    """Labeler pairs a question judged in full / left early, and the median judged in full.

    Args:
        records: A run's records (their counters).
    """
    counters = [r.get("counters") or {} for r in records]
    full = [c["labeler_pairs"] - c.get("exited_pairs", 0.0) for c in counters]
    exited = mean([c.get("exited_pairs", 0.0) for c in counters])
    return f"{mean(full):.1f} / {exited:.1f} ({statistics.median(full):.0f})"


def time_loops(
    settings: Mapping[str, Any], search: Any, questions: Sequence[str], quantize: str
) -> dict[str, float]:
    """Each loop setting's seconds a question, timed side by side (batches of ``TIMING_BATCH``, each
    run by every setting in a rotating order) over one Labeler and Filter loaded on ``quantize``'s
    path before the clock starts, their exit heads with them.

    Args:
        settings: Row name -> ``EfficientRAGConfig`` (all over the same Labeler and Filter).
        search: The search.
        questions: The questions timed.
        quantize: The models' inference path (``none``, ``bf16``, ...).
    """
    from efficientrag.models import Filter, Labeler
    from efficientrag.pipeline.efficientrag import EfficientRAG

    first = next(iter(settings.values()))
    labeler = Labeler.from_pretrained(first.labeler).quantize(quantize)
    filter_ = Filter.from_pretrained(first.filter).quantize(quantize)
    if any(cfg.exit_threshold is not None for cfg in settings.values()):
        labeler.early_exit()  # loaded (and its split checked) before the clock starts

    def method(cfg: Any):
        rag = EfficientRAG(search, labeler, filter_, replace(cfg, quantize=quantize))
        return lambda batch: rag.retrieve_batch(list(batch))

    return time_methods(
        {name: method(cfg) for name, cfg in settings.items()}, list(questions), batch_size=TIMING_BATCH
    )
