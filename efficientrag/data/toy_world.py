"""A fictional multi-hop world written by code, so tests and the quickstart need no download.

Why it looks the way it does:

- Every entity (country, city, organization, person, work) gets exactly one paragraph of 2-4
  sentences stating several of its facts, so labeling the words that answer a sub-question means
  picking them out of a paragraph that also holds other years, places and names.
- A bridge question names the first entity only ("Where was the director of <Work> born?"); the
  bridge entity (the director) is absent from the question and named in the hop-1 paragraph, so
  one retrieval with the question is genuinely weaker than following the hop.
- Distractors are confusable on purpose: paragraphs that mention a gold entity (other works by the
  same director, the spouse, people born in the same city), works sharing a title word, people in
  the same occupation, cities of the same country.
- Records are written in MuSiQue's format (plus a ``type`` key) and read by the MuSiQue reader,
  so the toy world goes through the same code as real data.

Determinism: one ``random.Random(seed)`` drives everything and nothing iterates over a set, so the
same arguments give byte-identical output.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from efficientrag.data.toy_entities import World
from efficientrag.data.toy_questions import MAKERS, QUESTION_TYPES, QuestionSpec
from efficientrag.errors import InvalidArgumentError, OperationError
from efficientrag.jsonl import write_jsonl

DEFAULT_TYPE_MIX = {"bridge": 0.4, "compositional": 0.25, "comparison": 0.25, "bridge_comparison": 0.1}


def _type_counts(num_questions: int, mix: dict[str, float]) -> dict[str, int]:
    """Largest-remainder split of ``num_questions`` by ``mix`` (exact, deterministic)."""
    unknown = [t for t in mix if t not in QUESTION_TYPES]
    if unknown:
        raise InvalidArgumentError(f"unknown toy question type(s) {unknown}; known: {list(QUESTION_TYPES)}")
    if any(w < 0 for w in mix.values()) or sum(mix.values()) <= 0:
        raise InvalidArgumentError(f"type_mix weights must be >= 0 with a positive sum, got {mix}")
    total = sum(mix.values())
    exact = {t: num_questions * mix.get(t, 0.0) / total for t in QUESTION_TYPES}
    counts = {t: int(x) for t, x in exact.items()}
    by_remainder = sorted(QUESTION_TYPES, key=lambda t: (-(exact[t] - counts[t]), QUESTION_TYPES.index(t)))
    for t in by_remainder[: num_questions - sum(counts.values())]:
        counts[t] += 1
    return counts


def _distractors(world: World, rng: random.Random, gold: list[str], n: int) -> list[str]:
    strong: list[str] = []
    for name in gold:
        strong += world.confusable(world.entities[name])
    strong = [x for x in dict.fromkeys(strong) if x not in gold]
    rng.shuffle(strong)
    chosen = strong[:n]
    if len(chosen) < n:
        same = [e.name for g in gold for e in world.same_kind(world.entities[g])]
        same = [x for x in dict.fromkeys(same) if x not in gold and x not in chosen]
        rng.shuffle(same)
        chosen += same[: n - len(chosen)]
    if len(chosen) < n:
        rest = [x for x in world.entities if x not in gold and x not in chosen]
        chosen += rng.sample(rest, min(n - len(chosen), len(rest)))
    return chosen


def _valid(spec: QuestionSpec) -> bool:
    """The guarantees the toy world makes; a spec that breaks one is redrawn."""
    if any(h in spec.question for h in spec.hidden):
        return False
    return not (spec.type in ("bridge", "compositional") and spec.answer in spec.question)


def _record(
    spec: QuestionSpec, world: World, rng: random.Random, qid: str, n_paragraphs: int, step_id: int
) -> dict[str, Any]:
    gold = spec.gold
    names = gold + _distractors(world, rng, gold, max(0, n_paragraphs - len(gold)))
    rng.shuffle(names)
    position = {name: i for i, name in enumerate(names)}
    gold_set = set(gold)
    paragraphs = [
        {
            "idx": i,
            "title": name,
            "paragraph_text": world.entities[name].paragraph,
            "is_supporting": name in gold_set,
        }
        for i, name in enumerate(names)
    ]
    decomposition = [
        {
            "id": step_id + k,
            "question": s.question,
            "answer": s.answer,
            "paragraph_support_idx": position[s.entity],
        }
        for k, s in enumerate(spec.steps)
    ]
    return {
        "id": qid,
        "type": spec.type,
        "paragraphs": paragraphs,
        "question": spec.question,
        "question_decomposition": decomposition,
        "answer": spec.answer,
        "answer_aliases": [a for a in spec.aliases if a != spec.answer],
        "answerable": True,
    }


def generate_toy_world(
    seed: int = 0,
    num_questions: int = 300,
    paragraphs_per_question: int = 10,
    type_mix: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """MuSiQue-format records (plus ``type``) for a freshly generated fictional world.

    Fictional people, places and works make multi-hop questions no pretrained model can answer
    from memory, and need no download; the same arguments always give the same records.

    Args:
        seed: Seed of the world and the questions.
        num_questions: How many questions to draw (the world grows with it: one scale step per 50).
        paragraphs_per_question: Paragraphs given with each question, gold and distractors (>= 4).
        type_mix: Relative weights of the question types ``bridge``, ``compositional``,
            ``comparison`` and ``bridge_comparison`` (None: ``DEFAULT_TYPE_MIX``); counts are split
            exactly by largest remainder.

    Returns:
        One MuSiQue-style record per question (``id``, ``question``, ``answer``, ``paragraphs``,
        ``question_decomposition``, ``type``, ...).

    Raises:
        ValueError: ``num_questions`` < 1, ``paragraphs_per_question`` < 4, or a bad ``type_mix``.
    """
    if num_questions < 1:
        raise InvalidArgumentError(f"num_questions must be >= 1, got {num_questions}")
    if paragraphs_per_question < 4:
        raise InvalidArgumentError(
            f"paragraphs_per_question must be >= 4 (bridge-comparison has 4 gold), got {paragraphs_per_question}"
        )
    counts = _type_counts(num_questions, dict(type_mix) if type_mix is not None else DEFAULT_TYPE_MIX)
    rng = random.Random(seed)
    world = World(rng, scale=max(1, -(-num_questions // 50)))
    order = [t for t in QUESTION_TYPES for _ in range(counts[t])]
    rng.shuffle(order)
    seen: set[str] = set()
    records = []
    step_id = 1
    for i, qtype in enumerate(order):
        for _ in range(500):
            spec = MAKERS[qtype](world, rng)
            if spec is not None and spec.question not in seen and _valid(spec):
                break
        else:
            raise OperationError(f"could not draw a new {qtype} question after 500 tries (world too small?)")
        seen.add(spec.question)
        qid = f"{qtype}__toy{seed}_{i:05d}"
        records.append(_record(spec, world, rng, qid, paragraphs_per_question, step_id))
        step_id += len(spec.steps)
    return records


def write_toy_world(path: str | Path, **kwargs: Any) -> int:
    """Write :func:`generate_toy_world` records as JSONL; returns the number of questions.

    Args:
        path: The JSONL file to write (replaced atomically).
        **kwargs: :func:`generate_toy_world`'s arguments.

    Returns:
        The number of questions written.
    """
    return write_jsonl(path, generate_toy_world(**kwargs))
