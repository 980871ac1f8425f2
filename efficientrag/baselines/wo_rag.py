"""wo-RAG (DRAGIN, Table 1): the chain-of-thought answer from the question alone, no retrieval."""

from __future__ import annotations

from efficientrag.baselines.active.loop import Program, Session
from efficientrag.baselines.active.method import ActiveMethod


class WoRAG(ActiveMethod):
    name = "wo_rag"

    def program(self, s: Session) -> Program:
        g = yield self.generate(s, (), self.remaining_for(s))
        pieces = self.usable(g)
        n, _ = self.through_answer(pieces, g.finish_reason == "stop")
        text = s.accept(pieces[:n])
        s.log(kind="generate", text=text)
