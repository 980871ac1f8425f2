"""Evaluation: ``evaluate(cfg)``, run fingerprints, metrics, reports and plots.

``from efficientrag.eval import evaluate`` runs what ``efficientrag eval`` runs; names are loaded on
first use, so importing a submodule (the metrics, the report) does not import the runner.
"""

from __future__ import annotations

from efficientrag.lazy import lazy_exports

_EXPORTS = {
    "evaluate": "efficientrag.eval.evaluation",
    "evaluate_method": "efficientrag.eval.evaluation",
    "RunSummary": "efficientrag.eval.evaluation",
    "run_method": "efficientrag.eval.runner",
    "write_report": "efficientrag.eval.report",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
