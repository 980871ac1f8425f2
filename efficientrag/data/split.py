"""Train/validation split by question: every row of one question lands on the same side.

A question's sub-questions share words and chunks; splitting rows instead of questions would leak
them into validation. The side depends only on the seed and the question id (a hash), so adding
questions to a run never moves an existing one.
"""

from __future__ import annotations

import hashlib

from efficientrag.errors import InvalidArgumentError

TRAIN = "train"
VALIDATION = "validation"


def split_of(question_id: str, *, validation_ratio: float, seed: int = 0) -> str:
    if not 0.0 <= validation_ratio <= 1.0:
        raise InvalidArgumentError(f"validation_ratio must be in [0, 1], got {validation_ratio}")
    digest = hashlib.sha256(f"{seed}\x00{question_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    return VALIDATION if u < validation_ratio else TRAIN


# A fixed part of every dev sample that no loop variant is designed or chosen on, from the commit
# that fixed it on (earlier designs saw every dev question). Comparisons report it beside the whole,
# so a reader sees whether a lead holds on questions the designer never looked at.
HELD_BACK_RATIO = 0.3
HELD_BACK_SEED = 7919


def held_back(question_id: str) -> bool:
    """Whether a dev question is in the part held back from design (a hash of its id alone, so it
    never moves)."""
    return split_of(question_id, validation_ratio=HELD_BACK_RATIO, seed=HELD_BACK_SEED) == VALIDATION
