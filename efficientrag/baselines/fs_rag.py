"""FS-RAG (DRAGIN, Table 1; IRCoT-like): retrieve before every sentence, with the previous sentence
as the query.

Step 1 retrieves with the question; step t > 1 with the sentence written in step t-1. Each step's
documents replace the previous ones; the step generates up to ``step_tokens`` tokens and keeps the
first sentence. The loop ends when the answer sentence is complete, the model stops, or the
generation length is used up.
"""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.baselines.active.loop import Program, Session
from efficientrag.baselines.active.method import ActiveCommon, ActiveMethod
from efficientrag.setting_fields import bounded


@dataclass
class FSRAGConfig(ActiveCommon):
    """Each step generates up to ``step_tokens`` tokens and keeps the first sentence."""

    step_tokens: int = bounded(64, low=1)


class FSRAG(ActiveMethod):
    name = "fs_rag"
    config_class = FSRAGConfig
    cfg: FSRAGConfig

    def program(self, s: Session) -> Program:
        return self.retrieve_every_step(s, "sentence", self.cfg.step_tokens, self.first_sentence)
