"""Prompts of the LLM teacher (``teacher: llm``): instructions, few-shot examples per dataset and
question type (``*.yaml``, data), and the render helpers that turn them into chat messages.

``PROMPT_VERSION`` and :func:`prompt_digest` (a hash of every instruction and example) go into the
teacher's ``params()``: a run resumed after the prompts changed is refused instead of mixing
records written from two prompts. Bump the version when a change is deliberate.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import lru_cache
from pathlib import Path

from efficientrag.synth.prompts import instructions
from efficientrag.synth.prompts.shots import PromptSet, load_prompt_set

PROMPT_VERSION = "1"

# Dataset name -> its examples, in the YAML file beside this module.
_FILES = {"hotpotqa": "hotpotqa", "2wikimultihopqa": "twowiki", "musique": "musique", "generic": "generic"}
PROMPT_SETS: dict[str, PromptSet] = {
    name: load_prompt_set(Path(__file__).with_name(f"{stem}.yaml")) for name, stem in _FILES.items()
}

__all__ = ["PROMPT_SETS", "PROMPT_VERSION", "PromptSet", "prompt_digest", "prompt_set"]


def prompt_set(dataset: str) -> PromptSet:
    """The prompts for an ``Example.dataset`` name; others (``jsonl`` data, ``toy``) get the generic set."""
    return PROMPT_SETS.get(dataset.strip().lower(), PROMPT_SETS["generic"])


@lru_cache(maxsize=1)
def prompt_digest() -> str:
    """Short sha256 of every instruction and example, in a stable serialization."""
    payload = {
        "instructions": [instructions.DECOMPOSE, instructions.LABEL, instructions.NEXT_HOP],
        "sets": {name: dataclasses.asdict(ps) for name, ps in sorted(PROMPT_SETS.items())},
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
