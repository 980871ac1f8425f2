"""wo-RAG (DRAGIN, Table 1): the chain-of-thought answer from the question alone, no retrieval."""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.baselines.active.loop import Program, Session
from efficientrag.baselines.active.method import ActiveCommon, ActiveMethod


@dataclass
class WoRAGConfig(ActiveCommon):
    """wo-RAG: the answer from the question alone."""


class WoRAG(ActiveMethod):
    name = "wo_rag"
    config_class = WoRAGConfig

    def program(self, s: Session) -> Program:
        return self.answer_at_once(s, (), kind="generate")
