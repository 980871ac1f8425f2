"""SR-RAG (DRAGIN, Table 1): one retrieval with the question, then the whole answer with those
documents in front of the question."""

from __future__ import annotations

from efficientrag.baselines.active.loop import Program, Session
from efficientrag.baselines.active.method import ActiveMethod


class SRRAG(ActiveMethod):
    name = "sr_rag"

    def program(self, s: Session) -> Program:
        hits = yield self.retrieve(s.question)
        docs = s.hold(hits[0])
        g = yield self.generate(s, docs, self.remaining_for(s))
        pieces = self.usable(g)
        n, _ = self.through_answer(pieces, g.finish_reason == "stop")
        text = s.accept(pieces[:n])
        s.log(kind="retrieve_generate", query=s.question, doc_ids=[d.id for d in docs], text=text)
