"""Iter-RetGen (Shao et al., 2023): retrieval and generation in turns.

Iteration 1 retrieves with the question; iteration t > 1 with the question followed by what the
model wrote in iteration t - 1 (its "thought", as the official EfficientRAG baseline does, or the
whole generation). Each iteration's answer call reads only that iteration's top-k chunks; the
final answer is the last iteration's. One LLM call and one retrieval per iteration.

The prediction's chunks are all iterations' retrievals in order (duplicates kept, so both the
unique count and the count with duplicates are reported). Views let one run report what the
paper reports for fewer iterations and what FlashRAG scores (the last iteration alone):
``iter<t>`` holds the chunks of iterations 1..t and the answer after iteration t, for t below the
configured number, and ``last_iteration`` the last iteration's chunks with the final answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from efficientrag.baselines.base import Method, Prediction
from efficientrag.baselines.cost import CostLedger
from efficientrag.baselines.replies import THOUGHT_PREFIX, answer_trace, read_answer, read_json_field
from efficientrag.baselines.settings import Settings
from efficientrag.data.schema import Example
from efficientrag.retrieval.base import Hit
from efficientrag.setting_fields import bounded

LAST_ITERATION = "last_iteration"


@dataclass
class IterRetGenConfig(Settings):
    """Iter-RetGen: ``iterations`` rounds of retrieve(question + previous generation) -> generate."""

    iterations: int = bounded(3, low=1)
    top_k: int = bounded(10, low=1)
    # What of the previous generation is appended to the question: its "thought" (the official
    # code) or the whole generated text.
    query_source: Literal["thought", "generation"] = "thought"
    max_new_tokens: int = bounded(384, low=1)


class IterRetGen(Method):
    name = "iter_retgen"
    config_class = IterRetGenConfig
    cfg: IterRetGenConfig

    def next_query(self, question: str, generation: str) -> str:
        thought = read_json_field(generation, "thought")
        if self.cfg.query_source == "thought" and thought:
            addition = thought
        elif self.cfg.query_source == "generation" and thought is not None:
            addition = f"{thought} {read_json_field(generation, 'answer') or ''}"
        else:
            addition = generation  # no JSON: the whole reply is the model's generation
        addition = " ".join(addition.split())
        return f"{question} {addition}" if addition else question

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        n = len(examples)
        ledger = CostLedger(n)
        sets = [self.library.for_example(ex) for ex in examples]
        queries = [ex.question for ex in examples]
        rounds: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        hits_by_round: list[list[list[Hit]]] = [[] for _ in range(n)]
        for _ in range(self.cfg.iterations):
            hits = ledger.search(self.retriever, range(n), queries, self.cfg.top_k)
            prompts = [
                self.as_prompt(ps.iter_retgen(ex.question, [h.chunk.contents for h in hs]), THOUGHT_PREFIX)
                for ps, ex, hs in zip(sets, examples, hits, strict=True)
            ]
            gens = ledger.generate(
                self.generator,
                range(n),
                prompts,
                stage="generate",
                max_new_tokens=self.cfg.max_new_tokens,
                temperature=self.temperature,
            )
            for i, (ex, hs, gen) in enumerate(zip(examples, hits, gens, strict=True)):
                found = read_answer(gen.text)
                if found.source != "json":
                    ledger.add(i, "format_failures")
                rounds[i].append(
                    {
                        "query": queries[i],
                        "ids": [h.id for h in hs],
                        "generation": gen.text,
                        "answer": found.answer,
                        **answer_trace(found),
                    }
                )
                hits_by_round[i].append(hs)
                queries[i] = self.next_query(ex.question, gen.text)
        out = []
        for i, ex in enumerate(examples):
            ledger.add(i, "iterations", self.cfg.iterations)
            all_hits = [h for hs in hits_by_round[i] for h in hs]
            views: dict[str, dict[str, Any]] = {}
            for t in range(1, self.cfg.iterations):
                views[f"iter{t}"] = {
                    "chunk_ids": [h.id for hs in hits_by_round[i][:t] for h in hs],
                    "answer": rounds[i][t - 1]["answer"],
                }
            views[LAST_ITERATION] = {"chunk_ids": rounds[i][-1]["ids"], "answer": rounds[i][-1]["answer"]}
            out.append(
                Prediction(
                    example_id=ex.id,
                    chunks=[h.chunk for h in all_hits],
                    scores=[h.score for h in all_hits],
                    answer=rounds[i][-1]["answer"],
                    trace={"prompt_family": sets[i].dataset, "iterations": rounds[i], "views": views},
                    counters=ledger.counters[i],
                    raw_output=rounds[i][-1]["generation"],
                )
            )
        return out
