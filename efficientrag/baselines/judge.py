"""Acc: an LLM judge says whether a prediction means the same as the gold answer.

The EfficientRAG paper's Acc (App. B.1) asks a judge model for a JSON ``{"response": "yes"|"no"}``
given the question, the prediction and the ground truth. We ask the same question in our own
words and list every gold alias. Parsing is tolerant (code fences, other key names, booleans,
a bare "Yes."); a reply that says neither counts as incorrect, as in the official script, and is
recorded as a judge failure. A judge too small to follow the instruction can be held to the verdict
object by the server (``constrain``: a JSON schema with ``"yes"``/``"no"`` as the only values). Calls go through :class:`~efficientrag.llm.client.LLMClient`, so
they are retried, counted and cached on disk when ``llm.cache_dir`` is set; an empty prediction is
judged incorrect without a call.

:class:`JudgedMethod` judges a method's answers right after each batch, so the verdicts land in the
same resumable records as everything else (``record["qa"]["acc"]``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from efficientrag.baselines.base import Prediction, Runnable
from efficientrag.baselines.config import JudgeConfig
from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.llm.errors import LLMError, LLMOutputError
from efficientrag.llm.json_output import parse_json_output

if TYPE_CHECKING:
    from efficientrag.llm.client import LLMClient

JUDGE_STAGE = "judge"
VERDICT_KEYS = ("response", "verdict", "correct", "is_correct", "judgement", "judgment", "answer")
POSITIVE = frozenset({"yes", "y", "true", "correct", "right", "1"})
NEGATIVE = frozenset({"no", "n", "false", "incorrect", "wrong", "0"})
_FIRST_WORD = re.compile(r"[A-Za-z]+|\d")
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"response": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["response"],
    "additionalProperties": False,
}

INSTRUCTION = (
    "You are checking answers to questions. Decide whether the predicted answer is correct, i.e. "
    "whether it refers to the same thing as one of the reference answers (the same entity, date, "
    "number, or yes/no); differences in wording, spelling, formatting or detail do not matter. "
    'Reply with only a JSON object: {"response": "yes"} if the prediction is correct, '
    '{"response": "no"} if it is not.'
)


def judge_messages(question: str, prediction: str, answers: Sequence[str]) -> list[dict[str, str]]:
    references = " | ".join(answers)
    content = (
        f"{INSTRUCTION}\n\nQuestion: {question}\nReference answer(s): {references}\n"
        f"Predicted answer: {prediction}\nYour verdict:"
    )
    return [{"role": "user", "content": content}]


def verdict_response_format(constrain: str) -> dict[str, Any] | None:
    """The ``response_format`` that holds a reply to :data:`VERDICT_SCHEMA` (``JudgeConfig.constrain``)."""
    if constrain == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "strict": True, "schema": VERDICT_SCHEMA},
        }
    if constrain == "json_object":
        return {"type": "json_object", "schema": VERDICT_SCHEMA}
    if constrain == "none":
        return None
    raise InvalidArgumentError(f"unknown judge constraint {constrain!r}")


def parse_verdict(text: str | None) -> bool | None:
    """True / False from a judge reply; None when it says neither."""
    if text is None or not text.strip():
        return None
    try:
        obj = parse_json_output(text, expect=dict)
    except LLMOutputError:
        obj = None
    if obj is not None:
        lowered = {str(k).strip().lower(): v for k, v in obj.items()}
        for key in VERDICT_KEYS:
            if key in lowered:
                verdict = _value_verdict(lowered[key])
                if verdict is not None:
                    return verdict
        return None
    match = _FIRST_WORD.search(text.strip().strip("`*\"'"))
    return _value_verdict(match.group(0)) if match else None


def _value_verdict(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".!\"'").lower()
        if word in POSITIVE:
            return True
        if word in NEGATIVE:
            return False
    return None


@dataclass(frozen=True)
class JudgeItem:
    question: str
    prediction: str
    answers: tuple[str, ...]


@dataclass
class JudgeVerdict:
    correct: bool | None
    raw: str = ""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "raw": self.raw, "error": self.error}


class LLMJudge:
    def __init__(self, cfg: JudgeConfig, *, client: LLMClient | None = None) -> None:
        if not cfg.llm.model:
            raise InvalidArgumentError(
                "baselines.judge.llm.model is empty: name the judge model (and baselines.judge.llm.base_url "
                "for a local server), or set baselines.judge.enabled=false"
            )
        self.cfg = cfg
        self._client = client
        self._owns_client = client is None

    @property
    def model(self) -> str:
        return self.cfg.llm.model

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            from efficientrag.llm.client import LLMClient

            self._client = LLMClient(self.cfg.llm)
        return self._client

    def judge(self, items: Sequence[JudgeItem]) -> list[JudgeVerdict]:
        """One verdict per item; identical items are asked once (all calls run concurrently)."""
        unique: dict[JudgeItem, int] = {}
        for item in items:
            if item.prediction.strip():
                unique.setdefault(item, len(unique))
        asked = list(unique)
        fmt = verdict_response_format(self.cfg.constrain)
        replies = (
            self.client.chat_many(
                [judge_messages(i.question, i.prediction, i.answers) for i in asked],
                return_exceptions=True,
                stage=JUDGE_STAGE,
                max_tokens=self.cfg.max_tokens,
                temperature=0.0,
                allow_truncated=True,
                **({"response_format": fmt} if fmt is not None else {}),
            )
            if asked
            else []
        )
        verdicts: list[JudgeVerdict] = []
        for reply in replies:
            if isinstance(reply, LLMError):
                verdicts.append(JudgeVerdict(None, "", f"{type(reply).__name__}: {reply}"))
            elif isinstance(reply, BaseException):
                raise reply
            else:
                verdicts.append(JudgeVerdict(parse_verdict(reply.text), reply.text))
        out = []
        for item in items:
            if not item.prediction.strip():
                out.append(JudgeVerdict(False, "", None))
            else:
                out.append(verdicts[unique[item]])
        return out

    def close(self) -> None:
        if self._owns_client and self._client is not None:
            self._client.close()


class JudgedMethod:
    """Runs a method, then asks the judge about every answer (and every view's answer)."""

    def __init__(self, inner: Runnable, judge: LLMJudge, *, include_views: bool = True) -> None:
        self.inner = inner
        self.judge = judge
        self.include_views = include_views
        self.name = inner.name

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        preds = self.inner.run_batch(examples)
        items: list[JudgeItem] = []
        slots: list[tuple[int, str | None]] = []
        for i, (ex, pred) in enumerate(zip(examples, preds, strict=True)):
            if pred.answer is None:
                continue
            items.append(JudgeItem(ex.question, pred.answer, tuple(ex.answers)))
            slots.append((i, None))
            if self.include_views:
                for view, data in (pred.trace.get("views") or {}).items():
                    if data.get("answer") is not None:
                        items.append(JudgeItem(ex.question, data["answer"], tuple(ex.answers)))
                        slots.append((i, view))
        verdicts = self.judge.judge(items)
        for (i, view), verdict in zip(slots, verdicts, strict=True):
            entry = preds[i].trace.setdefault("judge", {"model": self.judge.model, "views": {}})
            if view is None:
                entry["main"] = verdict.to_dict()
            else:
                entry["views"][view] = verdict.to_dict()
        return preds


def maybe_judged(judge_cfg: JudgeConfig, method: Runnable) -> Runnable:
    """``method`` judged by ``baselines.judge`` when it is enabled, else ``method`` itself."""
    if not judge_cfg.enabled:
        return method
    return JudgedMethod(method, LLMJudge(judge_cfg), include_views=judge_cfg.include_views)
