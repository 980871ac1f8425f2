"""One published number, and the expansion of a printed table row into such numbers.

Each paper's tables are written as compact row strings, as close to the printed table as
possible, and expanded into :class:`PaperNumber` records keyed by (method, variant, dataset,
metric). The keys use this package's names: methods as registered (``direct_r``, ``iter_retgen``
...; the variant says which printed row, e.g. ``"@10"`` or ``"iter2"``), datasets as
canonicalized by the data readers, metrics as the summary names them (``em``, ``f1``,
``contained``, ``acc``, ``recall``, ``num_chunks``, ``llm_calls``, ``latency_s``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from efficientrag.errors import InvalidArgumentError


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
            raise InvalidArgumentError(
                f"{paper} {table} row {method}{variant}: {len(values)} cells, expected {expected}"
            )
        for d, dataset in enumerate(datasets):
            for m, metric in enumerate(metrics):
                cell = values[d * len(metrics) + m]
                if cell in ("-", "–"):
                    continue
                out.append(PaperNumber(paper, table, method, variant, dataset, metric, float(cell), setting))
    return tuple(out)
