"""Single-hop questions for knowledge-base relations (2Wiki evidence triples, MuSiQue's
``"X >> relation"`` sub-questions), in our own wording.

Verbs are preferred over the relation's noun (``"Who directed X?"``, not ``"Who is the director of
X?"``) on purpose: the next-hop query removes the question words a sub-question shares with the
question, and multi-hop questions name the relation of the *next* hop with those nouns ("the
film whose director was born first"), which must stay in the query.
"""

from __future__ import annotations

from collections.abc import Sequence

TEMPLATES: dict[str, str] = {
    "director": "Who directed {s}?",
    "date of birth": "When was {s} born?",
    "date of death": "When did {s} die?",
    "place of birth": "Where was {s} born?",
    "place of death": "Where did {s} die?",
    "place of burial": "Where was {s} buried?",
    "cause of death": "What did {s} die of?",
    "father": "Who is the father of {s}?",
    "mother": "Who is the mother of {s}?",
    "spouse": "Who was {s} married to?",
    "child": "Who is a child of {s}?",
    "sibling": "Who is a sibling of {s}?",
    "country of citizenship": "Which country was {s} a citizen of?",
    "country of origin": "Which country does {s} come from?",
    "country": "Which country is {s} in?",
    "publication date": "When was {s} released?",
    "inception": "When was {s} founded?",
    "performer": "Who performed {s}?",
    "composer": "Who composed the music of {s}?",
    "educated at": "Where was {s} educated?",
    "employer": "Who employed {s}?",
    "award received": "Which award did {s} receive?",
    "presenter": "Who presented {s}?",
    "has part": "What is part of {s}?",
    "author": "Who wrote {s}?",
    "producer": "Who produced {s}?",
    "screenwriter": "Who wrote the screenplay of {s}?",
    "founded by": "Who founded {s}?",
    "creator": "Who created {s}?",
    "located in the administrative territorial entity": "Where is {s} located?",
    "headquarters location": "Where are the headquarters of {s}?",
    "occupation": "What was the occupation of {s}?",
    "member of sports team": "Which team did {s} play for?",
    "record label": "Which record label released {s}?",
    "publisher": "Who published {s}?",
    "follows": "What came before {s}?",
    "followed by": "What came after {s}?",
    "capital": "What is the capital of {s}?",
    "continent": "Which continent is {s} on?",
}


def relation_question(subject: str, relations: Sequence[str]) -> str:
    """One question for one or more relations of ``subject``; unknown relations get the generic
    "What is the <relation> of <subject>?"."""
    rels = [r.strip() for r in relations if r.strip()]
    if len(rels) == 1:
        template = TEMPLATES.get(rels[0].lower())
        if template:
            return template.format(s=subject)
        return f"What is the {rels[0]} of {subject}?"
    if not rels:
        return f"What is known about {subject}?"
    joined = ", ".join(rels[:-1]) + f" and {rels[-1]}"
    return f"What are the {joined} of {subject}?"


# Words that name the same relation in a question and in a sub-question ("the birthplace of X" /
# "Where was X born?"). Used only to widen the question span a next-hop query drops.
RELATED_WORDS: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "born birth birthplace",
        "died die death dead",
        "married marry spouse wife husband",
        "directed direct director",
        "wrote write written writer author",
        "composed compose composer",
        "founded found founder founding",
        "created create creator",
        "performed perform performer singer sang sung recorded record",
        "produced produce producer",
        "released release published publish publication",
        "played play player",
        "citizen citizenship nationality",
        "war fought fight",
        "employed employ employer worked",
        "located location headquartered headquarter",
        "educated study studied",
    )
)


def related_keys(keys: set[str]) -> set[str]:
    """Keys of words naming the same relations as ``keys`` (``keys`` themselves excluded)."""
    out: set[str] = set()
    for group in RELATED_WORDS:
        if group & keys:
            out |= group
    return out - keys
