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
from efficientrag.baselines.settings import bounded


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
        query = s.question
        while self.remaining_for(s) > 0:
            hits = yield self.retrieve(query)
            docs = s.hold(hits[0])
            g = yield self.generate(s, docs, min(self.cfg.window, self.remaining_for(s)))
            pieces = self.usable(g)
            finished = g.finish_reason == "stop"
            n, answered = self.through_answer(pieces, finished)
            window = s.accept(pieces[:n])
            s.log(kind="window", query=query, doc_ids=[d.id for d in docs], text=window)
            if answered or finished or n == 0:
                return
            query = self.trim_query(window.strip()) or s.question
