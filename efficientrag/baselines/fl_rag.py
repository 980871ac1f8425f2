"""FL-RAG (DRAGIN, Table 1): retrieve every ``window`` tokens, with the previous window as the query.

Step 1 retrieves with the question; step t > 1 with the ``window`` tokens written in step t-1
(FLARE's "previous-window" baseline: q_t = y_{t-1}). Each step's documents replace the previous
ones, and the step writes at most ``window`` tokens. The loop ends when the answer sentence is
complete, the model stops, or the generation length is used up.
"""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.baselines.active.loop import Program, Session
from efficientrag.baselines.active.method import ActiveCommon, ActiveMethod
from efficientrag.setting_fields import bounded


@dataclass
class FLRAGConfig(ActiveCommon):
    """Neither paper gives the window of its main runs (DRAGIN's configs omit ``fix_length``); 16
    is the window of FLARE's previous-window baseline (Ram et al.)."""

    window: int = bounded(16, low=1)


class FLRAG(ActiveMethod):
    name = "fl_rag"
    config_class = FLRAGConfig
    cfg: FLRAGConfig

    def program(self, s: Session) -> Program:
        return self.retrieve_every_step(s, "window", self.cfg.window, self.whole_step)
