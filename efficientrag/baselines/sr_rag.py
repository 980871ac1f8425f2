"""SR-RAG (DRAGIN, Table 1): one retrieval with the question, then the whole answer with those
documents in front of the question."""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.baselines.active.loop import Program, Session
from efficientrag.baselines.active.method import ActiveCommon, ActiveMethod


@dataclass
class SRRAGConfig(ActiveCommon):
    """SR-RAG: one retrieval with the question before generating."""


class SRRAG(ActiveMethod):
    name = "sr_rag"
    config_class = SRRAGConfig

    def program(self, s: Session) -> Program:
        hits = yield self.retrieve(s.question)
        docs = s.hold(hits[0])
        doc_ids = [d.id for d in docs]
        yield from self.answer_at_once(s, docs, kind="retrieve_generate", query=s.question, doc_ids=doc_ids)
