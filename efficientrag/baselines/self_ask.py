"""Self-Ask (Press et al., 2023) with retrieval, as the EfficientRAG paper runs it.

The model continues a plain-text scratchpad ("Are follow up questions needed here: / Follow up: /
Intermediate answer: / So the final answer is:"); generation stops where it would write an
intermediate answer. Each follow-up question retrieves its top-k chunks and one more call
answers it from them (the retrieval-answer prompt, JSON); that answer is appended as the
intermediate answer and the scratchpad is continued. After ``max_follow_ups`` follow-ups, or when
the model writes neither a follow-up nor a final answer, "So the final answer is:" is appended and
one short call completes it (an unanswered last follow-up is dropped first, as the official code
does). Calls per question: 2 per follow-up + the continuation steps (+ 1 when the end is forced).

Every question of a batch advances in lockstep: one batched call for all pending continuations,
one batched search for all follow-ups, one batched call for their answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from efficientrag.baselines.answering import answer_from_chunks
from efficientrag.baselines.base import Method, Prediction
from efficientrag.baselines.cost import CostLedger
from efficientrag.baselines.prompts import PromptSet
from efficientrag.baselines.prompts import instructions as ins
from efficientrag.baselines.replies import answer_trace, read_answer
from efficientrag.baselines.settings import Settings
from efficientrag.data.schema import Example
from efficientrag.llm.answers import ExtractedAnswer
from efficientrag.llm.generator import Generation
from efficientrag.retrieval.base import Hit
from efficientrag.setting_fields import bounded

# Where a continuation must stop: before an intermediate answer (ours comes from retrieval), or
# before the model starts inventing the next exemplar.
STEP_STOPS = ("\n" + ins.INTERMEDIATE, "\nQuestion:")
UNKNOWN = "unknown"


def follow_up_of(text: str) -> str | None:
    """The question of the last "Follow up:" line of a continuation, if it ends with one."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1]
    if not last.lower().startswith(ins.FOLLOW_UP.lower()):
        return None
    question = last[len(ins.FOLLOW_UP) :].strip()
    return question or None


def has_final(text: str) -> bool:
    return ins.FINAL.lower() in text.lower()


def final_answer(text: str) -> ExtractedAnswer:
    """The answer after the last "So the final answer is:" (empty when nothing follows it, rather
    than the marker line itself, which is what a last-line fallback would return)."""
    cut = text.lower().rfind(ins.FINAL.lower())
    rest = text[cut + len(ins.FINAL) :] if cut >= 0 else text
    if not rest.strip():
        return ExtractedAnswer("", "empty")
    return read_answer(f"{ins.FINAL}{rest}", expected="self_ask")


@dataclass
class _State:
    scratch: str
    prefix_len: int
    prompt_set: PromptSet
    follow_ups: list[dict[str, Any]] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    answer: str | None = None
    answer_info: dict[str, Any] = field(default_factory=dict)
    pending: str | None = None
    forced: bool = False


@dataclass
class SelfAskConfig(Settings):
    """Self-Ask: the model writes follow-up questions; each retrieves ``top_k`` chunks and one call
    answers it from them; after at most ``max_follow_ups`` the final answer is forced."""

    max_follow_ups: int = bounded(5, low=1)
    top_k: int = bounded(10, low=1)
    step_max_new_tokens: int = bounded(128, low=1)
    answer_max_new_tokens: int = bounded(128, low=1)
    final_max_new_tokens: int = bounded(64, low=1)


class SelfAsk(Method):
    name = "self_ask"
    config_class = SelfAskConfig
    cfg: SelfAskConfig

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        n = len(examples)
        ledger = CostLedger(n)
        states = []
        for ex in examples:
            ps = self.library.for_example(ex)
            start = ps.self_ask(ex.question)
            states.append(_State(scratch=start, prefix_len=len(start), prompt_set=ps))

        active = list(range(n))
        while active:
            self._continue(ledger, states, active)
            asking = [i for i in active if states[i].pending is not None]
            self._answer_follow_ups(ledger, examples, states, asking)
            active = asking
        forced = [i for i in range(n) if states[i].answer is None]
        self._force_final(ledger, states, forced)

        out = []
        for i, ex in enumerate(examples):
            st = states[i]
            ledger.add(i, "follow_ups", len(st.follow_ups))
            trace = {
                "prompt_family": st.prompt_set.dataset,
                "follow_ups": st.follow_ups,
                "scratchpad": st.scratch[st.prefix_len :],
                "forced_final": st.forced,
                **st.answer_info,
            }
            out.append(
                Prediction(
                    example_id=ex.id,
                    chunks=[h.chunk for h in st.hits],
                    scores=[h.score for h in st.hits],
                    answer=st.answer,
                    trace=trace,
                    counters=ledger.counters[i],
                    raw_output=st.scratch[st.prefix_len :],
                )
            )
        return out

    def _extend(
        self,
        ledger: CostLedger,
        states: list[_State],
        idx: list[int],
        stage: str,
        max_new: int,
        stop: Sequence[str],
    ) -> list[Generation]:
        """Continue the scratchpads of ``idx`` (greedy unless the method's temperature says otherwise)."""
        scratch = [states[i].scratch for i in idx]
        return ledger.generate(
            self.generator,
            idx,
            scratch,
            stage=stage,
            max_new_tokens=max_new,
            stop=stop,
            temperature=self.temperature,
        )

    def _continue(self, ledger: CostLedger, states: list[_State], active: list[int]) -> None:
        """One continuation of every active scratchpad; sets ``answer``, ``pending`` or neither."""
        gens = self._extend(ledger, states, active, "self_ask_step", self.cfg.step_max_new_tokens, STEP_STOPS)
        for i, gen in zip(active, gens, strict=True):
            st = states[i]
            ledger.add(i, "iterations")
            text = gen.text
            st.pending = None
            if has_final(text):
                st.scratch += text
                found = final_answer(text)
                st.answer = found.answer
                st.answer_info = answer_trace(found, "self_ask")
                continue
            question = follow_up_of(text)
            if question is not None and len(st.follow_ups) < self.cfg.max_follow_ups:
                st.scratch += text.rstrip()
                st.pending = question
            elif question is None:
                # Neither a follow-up nor an answer: keep what it wrote and ask for the answer.
                st.scratch += text

    def _answer_follow_ups(
        self, ledger: CostLedger, examples: Sequence[Example], states: list[_State], asking: list[int]
    ) -> None:
        if not asking:
            return
        questions = [states[i].pending or "" for i in asking]
        hits = ledger.search(self.retriever, asking, questions, self.cfg.top_k)
        answers = answer_from_chunks(
            self,
            ledger,
            asking,
            [states[i].prompt_set for i in asking],
            questions,
            [[h.chunk for h in hs] for hs in hits],
            max_new_tokens=self.cfg.answer_max_new_tokens,
            stage="intermediate",
        )
        for i, question, hs, (found, gen) in zip(asking, questions, hits, answers, strict=True):
            st = states[i]
            answer = found.answer or UNKNOWN
            st.hits.extend(hs)
            st.follow_ups.append(
                {"question": question, "ids": [h.id for h in hs], "answer": answer, "generation": gen.text}
            )
            st.scratch += f"\n{ins.INTERMEDIATE} {answer}\n"
            st.pending = None

    def _force_final(self, ledger: CostLedger, states: list[_State], forced: list[int]) -> None:
        for i in forced:
            st = states[i]
            st.forced = True
            if not st.scratch.endswith("\n"):
                st.scratch += "\n"
            st.scratch += ins.FINAL
        gens = self._extend(ledger, states, forced, "self_ask_final", self.cfg.final_max_new_tokens, ["\n"])
        for i, gen in zip(forced, gens, strict=True):
            st = states[i]
            st.scratch += gen.text
            found = final_answer(f"{ins.FINAL}{gen.text}")
            st.answer = found.answer
            st.answer_info = answer_trace(found, "self_ask")
            ledger.add(i, "forced_finals")
