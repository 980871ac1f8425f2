"""Answer metrics with the definitions the papers use.

All compare SQuAD-normalized strings (lowercase, no punctuation, no articles, single spaces;
:func:`efficientrag.text.normalize.normalize_answer`) and take the best score over the gold
answer's aliases (the first gold answer is the canonical one, the rest aliases).

* EM: the normalized prediction equals a normalized gold answer.
* F1: token-overlap F1 (SQuAD / HotpotQA official script). When either side normalizes to
  "yes", "no" or "noanswer", F1 is 1 only for an exact match and 0 otherwise, as in the
  HotpotQA script (so "no" does not half-match "no idea").
* contained: the normalized prediction is a substring of a normalized gold answer. This is what
  the EfficientRAG code calls "EM" (``evaluation/correctness.py``), so the paper's EM column
  compares with this one. Unlike that code, an empty prediction is not contained in anything
  (an empty string is a substring of every answer there).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from efficientrag.errors import InvalidArgumentError
from efficientrag.text.normalize import normalize_answer

SPECIAL = frozenset({"yes", "no", "noanswer"})


def exact_match(prediction: str, gold: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)


def f1_score(prediction: str, gold: str) -> float:
    pred = normalize_answer(prediction)
    ref = normalize_answer(gold)
    if (pred in SPECIAL or ref in SPECIAL) and pred != ref:
        return 0.0
    pred_tokens = pred.split()
    ref_tokens = ref.split()
    common = Counter(pred_tokens) & Counter(ref_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def contained(prediction: str, gold: str) -> bool:
    pred = normalize_answer(prediction)
    return bool(pred) and pred in normalize_answer(gold)


@dataclass(frozen=True)
class QAScores:
    em: float
    f1: float
    contained: float

    def to_dict(self) -> dict[str, float]:
        return {"em": self.em, "f1": self.f1, "contained": self.contained}


def score_answer(prediction: str | None, answers: Sequence[str]) -> QAScores:
    """Best EM / F1 / contained of ``prediction`` over ``answers`` (a None prediction scores 0)."""
    golds = [a for a in answers if isinstance(a, str)]
    if not golds:
        raise InvalidArgumentError("cannot score an answer against an example without gold answers")
    pred = prediction or ""
    return QAScores(
        em=float(max(exact_match(pred, g) for g in golds)),
        f1=max(f1_score(pred, g) for g in golds),
        contained=float(max(contained(pred, g) for g in golds)),
    )
