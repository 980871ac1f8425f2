"""2WikiMultihopQA: sub-questions from the ``evidences`` triples (subject, relation, object).

Each triple is one fact: the question is written from the relation (``relations.py``), the
answer is the object, the chunk is the gold paragraph titled like the subject (else the gold
paragraph that contains the object, else the subject). A triple depends on an earlier one whose
object is its subject, which gives the chains of compositional / inference questions and the two
chains of bridge_comparison; comparison questions have independent triples. When several triples
land on one paragraph (a comparison of lifespans: birth and death date of each person), they
become one sub-question with one answer part per triple, so there is still one sub-question per
gold chunk.

Records whose ``evidences`` is null (the public train slices) are decomposed from their
supporting-fact paragraphs instead (``twowiki_facts.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from efficientrag.data.readers.wiki_context import join_sentences
from efficientrag.data.schema import Chunk, Example
from efficientrag.synth.phrases import find_phrase
from efficientrag.synth.records import Decomposition, Reject, SubQuestion
from efficientrag.synth.teacher.base import R_MALFORMED, R_NO_PARAGRAPH, R_NOT_IN_CORPUS, field_of
from efficientrag.synth.teacher.paragraphs import ChunkLookup, RawParagraph
from efficientrag.synth.teacher.relations import relation_question
from efficientrag.synth.teacher.twowiki_facts import decompose_from_facts
from efficientrag.text.normalize import dedup_key
from efficientrag.text.words import split_words


@dataclass(frozen=True)
class _Gold:
    title: str
    sentences: tuple[str, ...]
    chunk_id: str
    words: tuple[str, ...]


def decompose(example: Example, lookup: ChunkLookup) -> Decomposition:
    raw = example.raw
    if raw.get("evidences") is None:
        return decompose_from_facts(example, lookup)
    evidences = field_of(raw, "evidences", list)
    golds = _gold_paragraphs(raw, lookup)
    triples = []
    for n, ev in enumerate(evidences):
        if not isinstance(ev, (list, tuple)) or len(ev) != 3:
            raise Reject(R_MALFORMED, f"evidences[{n}] is not a [subject, relation, object] triple")
        triples.append(tuple(str(x).strip() for x in ev))
    if not triples:
        raise Reject(R_MALFORMED, "no evidence triples")

    groups: dict[str, list[int]] = {}  # chunk id -> triple numbers, in first-seen order
    for n, (subj, _, obj) in enumerate(triples):
        gold = _paragraph_for(golds, subj, obj)
        if gold is None:
            raise Reject(R_NO_PARAGRAPH, f"evidence {list(triples[n])}: no gold paragraph for it")
        groups.setdefault(gold.chunk_id, []).append(n)

    group_of = {n: g for g, members in enumerate(groups.values()) for n in members}
    subs = []
    for g, (chunk_id, members) in enumerate(groups.items()):
        deps: set[int] = set()
        for n in members:
            subject_key = dedup_key(triples[n][0])
            for m in range(n):
                if group_of[m] != g and dedup_key(triples[m][2]) == subject_key:
                    deps.add(group_of[m] + 1)
        subjects = list(dict.fromkeys(triples[n][0] for n in members))
        if len(subjects) == 1:
            text = relation_question(subjects[0], [triples[n][1] for n in members])
        else:
            text = " ".join(relation_question(triples[n][0], [triples[n][1]]) for n in members)
        objects = [triples[n][2] for n in members]
        parts = objects if len(objects) > 1 else []
        subs.append(SubQuestion(g + 1, text, " and ".join(objects), sorted(deps), chunk_id, parts))
    return Decomposition(subs, str(raw.get("type") or example.type or ""))


def paragraph(example: Example, chunk: Chunk) -> RawParagraph | None:
    """The raw context entry of ``chunk``, with its supporting sentence numbers."""
    raw = example.raw
    target = dedup_key(chunk.contents)
    for entry in raw.get("context") or []:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[1], list)):
            continue
        title, sentences = str(entry[0]), [str(s) for s in entry[1]]
        text = join_sentences(sentences)
        if dedup_key(f"{title}: {text}") == target or dedup_key(text) == dedup_key(chunk.text):
            support = tuple(
                int(sf[1])
                for sf in raw.get("supporting_facts") or []
                if isinstance(sf, (list, tuple)) and len(sf) == 2 and str(sf[0]) == title
            )
            return RawParagraph(title, text, tuple(sentences), support)
    return None


def _gold_paragraphs(raw: dict[str, Any], lookup: ChunkLookup) -> list[_Gold]:
    context = field_of(raw, "context", list)
    facts = field_of(raw, "supporting_facts", list)
    titles = list(dict.fromkeys(str(sf[0]) for sf in facts if isinstance(sf, (list, tuple)) and sf))
    by_title: dict[str, tuple[str, list[str]]] = {}
    for n, entry in enumerate(context):
        if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[1], list)):
            raise Reject(R_MALFORMED, f"context[{n}] is not [title, [sentences]]")
        by_title.setdefault(str(entry[0]), (str(entry[0]), [str(s) for s in entry[1]]))
    golds = []
    for title in titles:
        if title not in by_title:
            raise Reject(R_MALFORMED, f"supporting fact title {title!r} is not in context")
        t, sentences = by_title[title]
        text = join_sentences(sentences)
        chunk_id = lookup.find(t, text)
        if chunk_id is None:
            raise Reject(R_NOT_IN_CORPUS, f"paragraph {t!r}")
        golds.append(_Gold(t, tuple(sentences), chunk_id, tuple(split_words(f"{t}: {text}"))))
    return golds


def _paragraph_for(golds: list[_Gold], subject: str, obj: str) -> _Gold | None:
    key = dedup_key(subject)
    for gold in golds:
        if dedup_key(gold.title) == key:
            return gold
    for phrase in (obj, subject):
        words = split_words(phrase)
        hits = [g for g in golds if find_phrase(g.words, words)]
        if hits:
            return hits[0]
    return None
