"""Published numbers, so a report can put a paper's figure next to ours.

Each paper's tables are written as compact row strings, as close to the printed table as
possible, and expanded into :class:`PaperNumber` records keyed by (method, variant, dataset,
metric). The keys use this package's names: methods as registered (``direct_r``, ``iter_retgen``
...; the variant says which printed row, e.g. ``"@10"`` or ``"iter2"``), datasets as
canonicalized by the data readers, metrics as the summary names them (``em``, ``f1``,
``contained``, ``acc``, ``recall``, ``num_chunks``, ``llm_calls``, ``latency_s``).

Watch the metric names: the EfficientRAG paper's "EM" is computed by its code as "normalized
prediction is a substring of the normalized gold answer", i.e. our ``contained``, so its EM column
is stored under ``contained``.

Adding another paper (FLARE Table 1, DRAGIN Tables 2-3): write a module
``efficientrag/eval/paper_numbers_<paper>.py`` that builds its numbers with :func:`table` and
exposes them as ``NUMBERS``, and add the module name to ``PAPER_MODULES`` below. A method key
that the harness also runs (``flare``, ``dragin``, ``fl_rag`` ...) lines the numbers up with our
runs in the report automatically; ``setting`` says what differs (model, retriever, split).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass

# Modules that contribute a NUMBERS tuple (besides this one). A missing module is skipped.
PAPER_MODULES = ("efficientrag.baselines.active.paper_numbers",)  # FLARE Table 1, DRAGIN Tables 2-3


@dataclass(frozen=True)
class PaperNumber:
    paper: str
    table: str
    method: str
    variant: str
    dataset: str
    metric: str
    value: float
    setting: str

    @property
    def source(self) -> str:
        return f"{self.paper}, {self.table}"


def table(
    *,
    paper: str,
    table: str,
    setting: str,
    datasets: Sequence[str],
    metrics: Sequence[str],
    rows: dict[tuple[str, str], str],
) -> tuple[PaperNumber, ...]:
    """Expand printed rows: ``rows[(method, variant)]`` holds the row's cells, whitespace
    separated, dataset-major (all metrics of the first dataset, then the next); "-" for a blank."""
    out = []
    for (method, variant), cells in rows.items():
        values = cells.replace("/", " ").replace("|", " ").split()
        expected = len(datasets) * len(metrics)
        if len(values) != expected:
            raise ValueError(
                f"{paper} {table} row {method}{variant}: {len(values)} cells, expected {expected}"
            )
        for d, dataset in enumerate(datasets):
            for m, metric in enumerate(metrics):
                cell = values[d * len(metrics) + m]
                if cell in ("-", "–"):
                    continue
                out.append(PaperNumber(paper, table, method, variant, dataset, metric, float(cell), setting))
    return tuple(out)


EFFICIENTRAG = "EfficientRAG (Zhuang et al., EMNLP 2024)"
_DATASETS = ("hotpotqa", "musique", "2wikimultihopqa")

EFFICIENTRAG_TABLE_2 = table(
    paper=EFFICIENTRAG,
    table="Table 2",
    setting="Contriever-MSMARCO over each dataset's pooled dev contexts; K = average chunks retrieved",
    datasets=_DATASETS,
    metrics=("recall", "num_chunks"),
    rows={
        ("direct_r", "@10"): "70.52 10 | 50.86 10 | 61.58 10",
        ("direct_r", "@20"): "74.87 20 | 57.12 20 | 65.24 20",
        ("direct_r", "@30"): "77.05 30 | 60.67 30 | 66.91 30",
        ("decompose_r", ""): "74.38 21.31 | 67.23 19.74 | 71.02 21.24",
        ("iter_retgen", "iter2"): "81.69 14.44 | 57.74 14.82 | 73.80 14.95",
        ("iter_retgen", "iter3"): "83.05 16.42 | 58.26 17.19 | 74.29 17.32",
        ("self_ask", ""): "73.42 35.27 | 60.43 32.36 | 88.90 33.68",
        ("efficientrag", ""): "81.84 6.41 | 49.51 6.09 | 84.08 3.69",
    },
)

EFFICIENTRAG_TABLE_3 = table(
    paper=EFFICIENTRAG,
    table="Table 3",
    setting="Llama-3-8B-Instruct generator; EM printed by the paper = our 'contained'; Acc by a Llama-3-70B judge",
    datasets=_DATASETS,
    metrics=("contained", "f1", "acc"),
    rows={
        ("direct", ""): "22.87 26.94 25.79 | 5.59 8.76 5.51 | 27.33 31.11 28.67",
        ("cot", ""): "27.99 34.05 30.53 | 10.16 13.85 9.21 | 29.25 35.14 31.71",
        ("direct_r", "@10"): "38.24 44.55 44.56 | 13.39 18.14 17.12 | 26.18 31.88 32.70",
        ("decompose_r", ""): "36.15 42.68 46.31 | 12.59 19.25 19.53 | 25.22 31.44 32.53",
        ("iter_retgen", "iter2"): "55.45 59.47 59.29 | 26.95 29.15 26.28 | 43.85 49.96 49.22",
        ("iter_retgen", "iter3"): "56.76 60.89 57.56 | 28.20 30.31 25.31 | 43.07 49.83 46.59",
        ("self_ask", ""): "33.58 39.10 42.36 | 24.56 29.22 26.97 | 47.56 54.84 55.16",
        ("efficientrag", ""): "50.59 57.93 57.86 | 16.44 21.18 20.00 | 44.18 51.64 53.41",
    },
)

EFFICIENTRAG_TABLE_4 = table(
    paper=EFFICIENTRAG,
    table="Table 4",
    setting="200 MuSiQue questions, Llama-3-8B-Instruct on GPU; latency in seconds per question",
    datasets=("musique",),
    metrics=("llm_calls", "latency_s"),
    rows={
        ("direct", ""): "1.00 2.16",
        ("direct_r", "@10"): "1.00 2.47",
        ("iter_retgen", "iter3"): "3.00 9.68",
        ("self_ask", ""): "7.18 27.47",
        ("efficientrag", ""): "1.00 3.62",
    },
)

NUMBERS: tuple[PaperNumber, ...] = EFFICIENTRAG_TABLE_2 + EFFICIENTRAG_TABLE_3 + EFFICIENTRAG_TABLE_4


def all_numbers() -> tuple[PaperNumber, ...]:
    numbers = list(NUMBERS)
    for module_name in PAPER_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        numbers.extend(module.NUMBERS)
    return tuple(numbers)


def lookup(
    method: str, variant: str, dataset: str, metric: str, numbers: Sequence[PaperNumber] | None = None
) -> PaperNumber | None:
    for number in numbers if numbers is not None else all_numbers():
        if (number.method, number.variant, number.dataset, number.metric) == (
            method,
            variant,
            dataset,
            metric,
        ):
            return number
    return None
