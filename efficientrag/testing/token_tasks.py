"""Small, learnable Labeler/Filter training sets for tests and smoke runs (not training data).

The rule the models must learn is simple and fully determined by the text: a Labeler chunk holds a
few "<person> was born in <city> ." / "<person> works as a <job> ." facts; for the query "Where
was <person> born ?" the useful words are that person's birth fact, and the tag is Continue when
the chunk mentions the person at all. A Filter input is ``Query: Where was the <job> of <place>
born ? Info: <person> is the <job> of <place>``; the next-hop query keeps "Where was born ?" and
the person's name. Real training sets come from ``efficientrag.synth``.
"""

from __future__ import annotations

import random
from pathlib import Path

from efficientrag.jsonl import write_jsonl
from efficientrag.models.inputs import TAG_CONTINUE, TAG_TERMINATE, FilterRow, LabelerRow, filter_words

PEOPLE = [
    "Alaric",
    "Brenna",
    "Cassius",
    "Delphine",
    "Emrys",
    "Fenwick",
    "Gisela",
    "Halvard",
    "Ilsabet",
    "Jorund",
    "Kestrel",
    "Leofric",
    "Maelis",
    "Norwenna",
    "Osric",
    "Perpetua",
    "Quillon",
    "Rosamund",
    "Sigvald",
    "Thessaly",
    "Ulfric",
    "Verity",
    "Wystan",
    "Xanthe",
    "Yseult",
    "Zephyrine",
]
CITIES = [
    "Vantmoor",
    "Quellbridge",
    "Ostrava",
    "Pellington",
    "Marrowgate",
    "Thistlecombe",
    "Brightwater",
    "Harrowdale",
    "Elmsworth",
    "Caldmere",
    "Duskhollow",
    "Frostvale",
]
JOBS = ["painter", "surgeon", "cartographer", "violinist", "architect", "botanist", "sculptor", "astronomer"]
PLACES = ["the Royal Academy", "Saint Aldric Hospital", "the Lantern Theatre", "Greyfield College"]


def _fact(rng: random.Random, person: str) -> list[str]:
    if rng.random() < 0.5:
        return [person, "was", "born", "in", rng.choice(CITIES), "."]
    return [person, "works", "as", "a", rng.choice(JOBS), "."]


def labeler_rows(n: int, *, seed: int = 0, prefix: str = "lab") -> list[LabelerRow]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        person = rng.choice(PEOPLE)
        mentioned = rng.random() < 0.5
        others = [p for p in PEOPLE if p != person]
        words: list[str] = []
        labels: list[int] = []
        subjects = rng.sample(others, rng.randint(2, 5))
        if mentioned:
            subjects.insert(rng.randrange(len(subjects) + 1), person)
        for subject in subjects:
            if subject == person:
                fact = [person, "was", "born", "in", rng.choice(CITIES), "."]
                words += fact
                labels += [1, 0, 1, 1, 1, 0]
            else:
                fact = _fact(rng, subject)
                words += fact
                labels += [0] * len(fact)
        rows.append(
            LabelerRow(
                id=f"{prefix}-{i}",
                question_id=f"q{i}",
                query_words=["Where", "was", person, "born", "?"],
                chunk_words=words,
                labels=labels,
                tag=TAG_CONTINUE if mentioned else TAG_TERMINATE,
            )
        )
    return rows


def filter_rows(n: int, *, seed: int = 0, prefix: str = "fil") -> list[FilterRow]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        job, place, person = rng.choice(JOBS), rng.choice(PLACES).split(), rng.choice(PEOPLE)
        query = ["Where", "was", "the", job, "of", *place, "born", "?"]
        info = [person, "is", "the", job, "of", *place]
        words = filter_words(query, [info])
        keep = {
            ("Where", 2),
            ("was", 3),
            ("born", len(query)),
            ("?", len(query) + 1),
            (person, len(query) + 4),
        }
        labels = [1 if (w, j) in keep else 0 for j, w in enumerate(words)]
        rows.append(FilterRow(id=f"{prefix}-{i}", question_id=f"q{i}", words=words, labels=labels))
    return rows


def write_rows(folder: str | Path, train: list, validation: list) -> Path:
    """``train.jsonl`` and ``validation.jsonl`` in the layout the trainer reads."""
    folder = Path(folder)
    write_jsonl(folder / "train.jsonl", [r.to_dict() for r in train])
    write_jsonl(folder / "validation.jsonl", [r.to_dict() for r in validation])
    return folder


def sentences(n: int, *, seed: int = 0) -> list[str]:
    """Text in the toy world's vocabulary, e.g. to train a small tokenizer for a test backbone."""
    rows = labeler_rows(n, seed=seed)
    out = [" ".join(r.query_words + r.chunk_words) for r in rows]
    out += [" ".join(r.words) for r in filter_rows(max(1, n // 4), seed=seed)]
    return out
