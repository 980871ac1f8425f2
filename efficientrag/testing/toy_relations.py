"""The toy world split by relation type, for adaptation tests: train on one half, adapt to the other.

Each toy question's decomposition steps name their relation in fixed wording ("Who directed X?",
"Where is #1 headquartered?"), so a record's relations can be read off its steps. The halves:
relations of people (who made a work, where and when they were born, whom they married, where
they worked) and relations of organizations and places (who produced a work, where an
organization sits, which country a city is in, when something was founded). A question belongs
to a half when every step does; comparison questions (one attribute per entity, no bridge) are
left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from efficientrag.data.toy_world import generate_toy_world
from efficientrag.jsonl import write_jsonl

_RELATIONS = (
    ("creator", re.compile(r"^Who (directed|wrote|recorded) ")),
    ("birthplace", re.compile(r"^Where was .+ born\?$")),
    ("born_year", re.compile(r"^When was .+ born\?$")),
    ("spouse", re.compile(r"^Who is .+ married to\?$")),
    ("employer", re.compile(r"^Which .+ has .+ worked for\?$")),
    (
        "producer",
        re.compile(r"^Which (film studio|publishing house|record label) (produced|published|released) "),
    ),
    ("headquarters", re.compile(r"^Where is .+ headquartered\?$")),
    ("country", re.compile(r"^Which country is .+ in\?$")),
    ("founded", re.compile(r"^When was .+ founded\?$")),
)
PEOPLE = frozenset({"creator", "birthplace", "born_year", "spouse", "employer"})
PLACES = frozenset({"producer", "headquarters", "country", "founded"})
HALVES = {"people": PEOPLE, "places": PLACES}


def step_relation(question: str) -> str:
    for name, pattern in _RELATIONS:
        if pattern.search(question):
            return name
    return "other"


def record_relations(record: dict[str, Any]) -> list[str]:
    return [step_relation(step["question"]) for step in record["question_decomposition"]]


def toy_half(half: str, *, seed: int, num_questions: int) -> list[dict[str, Any]]:
    """The records of a generated world whose every step is a relation of ``half``."""
    relations = HALVES[half]
    mix = {"bridge": 0.5, "compositional": 0.3, "bridge_comparison": 0.2}
    records = generate_toy_world(seed=seed, num_questions=num_questions, type_mix=mix)
    return [r for r in records if set(record_relations(r)) <= relations]


def write_toy_half(path: str | Path, half: str, *, seed: int, num_questions: int) -> Sequence[dict[str, Any]]:
    records = toy_half(half, seed=seed, num_questions=num_questions)
    write_jsonl(path, records)
    return records
