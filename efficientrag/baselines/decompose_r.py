"""Decompose-R: one LLM call splits the question into single-hop sub-questions (JSON), each one
retrieves its top-k, and one answer call reads the union (two LLM calls per question).

A reply with no usable list (no JSON, an empty list) falls back to retrieving with the question
itself, counted as ``decompose_failures``, so the question still gets an answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from efficientrag.baselines.answering import answer_from_chunks, context_chunks
from efficientrag.baselines.base import Method, Prediction
from efficientrag.baselines.cost import CostLedger
from efficientrag.baselines.replies import DECOMPOSE_PREFIX, answer_trace
from efficientrag.baselines.settings import Settings
from efficientrag.data.schema import Example
from efficientrag.llm.errors import LLMOutputError
from efficientrag.llm.json_output import parse_json_output
from efficientrag.setting_fields import bounded

LIST_KEYS = ("decomposed_questions", "sub_questions", "subquestions", "questions")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)]|#\d+:?|Q\d+:)\s*")


def parse_sub_questions(text: str) -> tuple[list[str], str]:
    """(sub-questions, where they came from: "json" | "json_list" | "lines" | "none")."""
    try:
        obj = parse_json_output(text, expect=dict)
    except LLMOutputError:
        obj = None
    if obj is not None:
        for key in LIST_KEYS:
            if key in obj:
                found = _strings(obj[key])
                if found:
                    return found, "json"
    try:
        found = _strings(parse_json_output(text, expect=list))
        if found:
            return found, "json_list"
    except LLMOutputError:
        pass
    lines = [_BULLET.sub("", line).strip() for line in text.splitlines()]
    found = _dedupe([line for line in lines if line.endswith("?") and len(line) > 3])
    return (found, "lines") if found else ([], "none")


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        if isinstance(item, dict):
            item = item.get("sub_question") or item.get("question") or ""
        if isinstance(item, str) and item.strip():
            out.append(" ".join(item.split()))
    return _dedupe(out)


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.lower()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


@dataclass
class DecomposeRConfig(Settings):
    """Decompose-R: one LLM call splits the question into sub-questions (JSON), each retrieves
    ``top_k``, one answer call reads the union."""

    top_k: int = bounded(10, low=1)
    # Sub-questions beyond this are dropped (a runaway decomposition must not cost 50 retrievals).
    max_sub_questions: int = bounded(6, low=1)
    # Chunks the answer call reads from the de-duplicated union (None: all of them).
    answer_top_k: int | None = bounded(None, low=1)
    decompose_max_new_tokens: int = bounded(256, low=1)
    max_new_tokens: int = bounded(128, low=1)


class DecomposeR(Method):
    name = "decompose_r"
    config_class = DecomposeRConfig
    cfg: DecomposeRConfig

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        n = len(examples)
        ledger = CostLedger(n)
        sets = [self.library.for_example(ex) for ex in examples]
        gens = ledger.generate(
            self.generator,
            range(n),
            [
                self.as_prompt(ps.decompose(ex.question), DECOMPOSE_PREFIX)
                for ps, ex in zip(sets, examples, strict=True)
            ],
            stage="decompose",
            max_new_tokens=self.cfg.decompose_max_new_tokens,
            temperature=self.temperature,
        )
        plans: list[dict[str, Any]] = []
        for i, (ex, gen) in enumerate(zip(examples, gens, strict=True)):
            subs, source = parse_sub_questions(gen.text)
            if not subs:
                subs = [ex.question]
                ledger.add(i, "decompose_failures")
            dropped = max(0, len(subs) - self.cfg.max_sub_questions)
            subs = subs[: self.cfg.max_sub_questions]
            ledger.add(i, "sub_questions", len(subs))
            plans.append({"raw": gen.text, "source": source, "sub_questions": subs, "dropped": dropped})

        owners = [i for i, plan in enumerate(plans) for _ in plan["sub_questions"]]
        queries = [q for plan in plans for q in plan["sub_questions"]]
        hits = ledger.search(self.retriever, owners, queries, self.cfg.top_k)
        per_question: list[list[tuple[str, list[Any]]]] = [[] for _ in range(n)]
        for owner, query, hs in zip(owners, queries, hits, strict=True):
            per_question[owner].append((query, hs))

        retrieved = [[h for _, hs in rounds for h in hs] for rounds in per_question]
        contexts = [context_chunks([h.chunk for h in hs], self.cfg.answer_top_k) for hs in retrieved]
        answers = answer_from_chunks(
            self,
            ledger,
            range(n),
            sets,
            [ex.question for ex in examples],
            contexts,
            max_new_tokens=self.cfg.max_new_tokens,
        )
        out = []
        for i, ex in enumerate(examples):
            found, gen = answers[i]
            trace = {
                "prompt_family": sets[i].dataset,
                "decomposition": plans[i],
                "retrievals": [{"query": q, "ids": [h.id for h in hs]} for q, hs in per_question[i]],
                "context_ids": [c.id for c in contexts[i]],
                **answer_trace(found),
            }
            out.append(
                Prediction(
                    example_id=ex.id,
                    chunks=[h.chunk for h in retrieved[i]],
                    scores=[h.score for h in retrieved[i]],
                    answer=found.answer,
                    trace=trace,
                    counters=ledger.counters[i],
                    raw_output=gen.text,
                )
            )
        return out
