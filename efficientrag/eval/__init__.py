"""Evaluation: ``evaluate(cfg)``, the runs it makes, metrics, reports and plots.

``from efficientrag.eval import evaluate`` runs what ``efficientrag eval`` runs; names are loaded on
first use, so importing a submodule (the metrics, the report) does not import the runner.
"""

from __future__ import annotations

from efficientrag.lazy import by_module, lazy_exports

_EXPORTS = by_module(
    __name__,
    {
        "evaluation": ("evaluate", "evaluate_method", "RunSummary"),
        "runner": ("run_method",),
        "report": ("write_report",),
    },
)

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
