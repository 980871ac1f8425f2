"""Direct: the model answers from its own knowledge, one call, no retrieval (the paper's "Direct")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from efficientrag.baselines.base import Method, Prediction
from efficientrag.baselines.cost import CostLedger
from efficientrag.baselines.prompts import PromptSet
from efficientrag.baselines.replies import (
    ANSWER_PREFIX,
    THOUGHT_PREFIX,
    answer_trace,
    read_answer,
    read_json_field,
)
from efficientrag.baselines.settings import Settings
from efficientrag.data.schema import Example
from efficientrag.setting_fields import bounded


@dataclass
class DirectConfig(Settings):
    """Direct: the question alone, one answer call."""

    max_new_tokens: int = bounded(128, low=1)


class Direct(Method):
    """One answer call per question with no retrieval, batched over questions. CoT is the same
    call with another prompt (``render``) whose reply also carries the reasoning."""

    name = "direct"
    config_class = DirectConfig
    cfg: DirectConfig
    render = staticmethod(PromptSet.direct)
    with_thought = False

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        ledger = CostLedger(len(examples))
        sets = [self.library.for_example(ex) for ex in examples]
        prefix = THOUGHT_PREFIX if self.with_thought else ANSWER_PREFIX
        prompts = [
            self.as_prompt(self.render(ps, ex.question), prefix)
            for ps, ex in zip(sets, examples, strict=True)
        ]
        gens = ledger.generate(
            self.generator,
            range(len(examples)),
            prompts,
            stage="answer",
            max_new_tokens=self.cfg.max_new_tokens,
            temperature=self.temperature,
        )
        out = []
        for i, (ex, ps, gen) in enumerate(zip(examples, sets, gens, strict=True)):
            found = read_answer(gen.text)
            trace: dict[str, object] = {
                "prompt_family": ps.dataset,
                "closed_book": True,
                **answer_trace(found),
            }
            if self.with_thought:
                trace["thought"] = read_json_field(gen.text, "thought")
            if not trace["followed_format"]:
                ledger.add(i, "format_failures")
            out.append(
                Prediction(
                    example_id=ex.id,
                    chunks=[],
                    answer=found.answer,
                    trace=trace,
                    counters=ledger.counters[i],
                    raw_output=gen.text,
                )
            )
        return out
