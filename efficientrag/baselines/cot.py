"""CoT: no retrieval; the model writes its reasoning, then the answer, in one JSON reply."""

from __future__ import annotations

from collections.abc import Sequence

from efficientrag.baselines.base import Prediction
from efficientrag.baselines.prompts import PromptLibrary, PromptSet
from efficientrag.baselines.qa_base import GeneratorSource, LLMMethod, closed_book
from efficientrag.data.schema import Example


class CoT(LLMMethod):
    name = "cot"

    def __init__(
        self,
        generator: GeneratorSource,
        prompts: PromptLibrary | None = None,
        *,
        max_new_tokens: int = 384,
        chat: bool = True,
        temperature: float = 0.0,
    ) -> None:
        super().__init__(generator, prompts, chat=chat, temperature=temperature)
        self.max_new_tokens = max_new_tokens

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        return closed_book(
            self, examples, PromptSet.cot, max_new_tokens=self.max_new_tokens, with_thought=True
        )
