"""Prompts of the LLM teacher (``teacher: llm``): instructions, few-shot examples per dataset and
question type, and the render helpers that turn them into chat messages.

``PROMPT_VERSION`` and :func:`prompt_digest` (a hash of every instruction and example) go into the
teacher's ``params()``: a run resumed after the prompts changed is refused instead of mixing
records written from two prompts. Bump the version when a change is deliberate.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import lru_cache

from efficientrag.synth.prompts import generic, hotpotqa, instructions, musique, twowiki
from efficientrag.synth.prompts.shots import PromptSet

PROMPT_VERSION = "1"

PROMPT_SETS: dict[str, PromptSet] = {
    "hotpotqa": hotpotqa.PROMPTS,
    "2wikimultihopqa": twowiki.PROMPTS,
    "musique": musique.PROMPTS,
    "generic": generic.PROMPTS,
}

__all__ = ["PROMPT_SETS", "PROMPT_VERSION", "PromptSet", "prompt_digest", "prompt_set"]


def prompt_set(dataset: str) -> PromptSet:
    """The prompts for an ``Example.dataset`` name; others (``jsonl`` data, ``toy``) get the generic set."""
    return PROMPT_SETS.get(dataset.strip().lower(), generic.PROMPTS)


@lru_cache(maxsize=1)
def prompt_digest() -> str:
    """Short sha256 of every instruction and example, in a stable serialization."""
    payload = {
        "instructions": [instructions.DECOMPOSE, instructions.LABEL, instructions.NEXT_HOP],
        "sets": {name: dataclasses.asdict(ps) for name, ps in sorted(PROMPT_SETS.items())},
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
