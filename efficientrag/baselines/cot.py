"""CoT: no retrieval; the model writes its reasoning, then the answer, in one JSON reply."""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.baselines.direct import Direct
from efficientrag.baselines.prompts import PromptSet
from efficientrag.baselines.settings import Settings
from efficientrag.setting_fields import bounded


@dataclass
class CoTConfig(Settings):
    """CoT: the question alone; the model reasons, then answers (one call)."""

    max_new_tokens: int = bounded(384, low=1)


class CoT(Direct):
    name = "cot"
    config_class = CoTConfig
    render = staticmethod(PromptSet.cot)
    with_thought = True
