"""HotpotQA: two gold paragraphs per question, no annotated decomposition.

- comparison: two independent sub-questions, one per gold paragraph ("Regarding <title>: <question>").
  The compared attribute of each entity is not annotated, so both carry the question's answer;
  for yes/no answers and for the paragraph that does not hold the answer, the labeled words fall
  back to the supporting sentence's overlap with the question (see ``evidence.py``).
- bridge: the bridge entity is the title of one gold paragraph, mentioned in the other. Hop 1 is
  the paragraph that mentions the other's title (ties and no-mention cases: the paragraph whose
  title the question names; still undecided: rejected as "bridge order ambiguous"). A "bridge"
  question that names both titles ("Who is older, Annie Morton or Terry Richardson?", typed
  bridge in the dev set) is handled as a comparison. Hop 1 answers
  with the bridge entity; hop 2 depends on it and answers the question. Sub-question texts are
  cut from the question: hop 1 asks for the question span about hop 1's paragraph ("Who or what is
  the woman who portrayed Corliss Archer in the film Kiss and Tell?"), hop 2 is the question with
  that span replaced by the bridge entity.

Two record formats: the original distractor JSON (``context``, sentence-level
``supporting_facts``, ``type``) and IRCoT's JSONL (``contexts`` with paragraph-level
``is_supporting`` only, no ``type``: comparison is inferred from a yes/no answer or the question
naming both titles).
"""

from __future__ import annotations

import re
from typing import Any

from efficientrag.data.readers.wiki_context import join_sentences
from efficientrag.data.schema import Chunk, Example
from efficientrag.synth.phrases import find_phrase_spans, is_content, loose_key
from efficientrag.synth.records import Decomposition, Reject, SubQuestion
from efficientrag.synth.teacher.base import R_MALFORMED, R_NOT_IN_CORPUS, field_of
from efficientrag.synth.teacher.evidence import YES_NO
from efficientrag.synth.teacher.paragraphs import ChunkLookup, RawParagraph
from efficientrag.text.normalize import dedup_key, normalize_answer
from efficientrag.text.words import join_words, split_words

R_GOLD_COUNT = "not two gold paragraphs"
R_AMBIGUOUS = "bridge order ambiguous"
_PAREN = re.compile(r"\s*\([^)]*\)\s*$")
_RELATIVE = {"who", "whom", "whose", "which", "that", "where"}
_DETERMINERS = {"the", "a", "an"}
_QUOTES = {'"', "'", "``", "''", "“", "”"}


def decompose(example: Example, lookup: ChunkLookup) -> Decomposition:
    golds = gold_paragraphs(example.raw)
    qtype = str(example.raw.get("type") or example.type or "") or infer_type(
        example.question, example.answer.strip(), golds
    )
    return decompose_pair(example, lookup, golds, qtype)


def decompose_pair(
    example: Example,
    lookup: ChunkLookup,
    golds: list[RawParagraph],
    qtype: str,
    *,
    possessive_relations: bool = False,
) -> Decomposition:
    """Two gold paragraphs, typed ``comparison`` or ``bridge``: also used for 2WikiMultihopQA
    records without evidence triples (same context format, same two kinds of reasoning).

    ``possessive_relations`` (2Wiki's templates: "the date of birth of Mina Gerhardsen's father")
    widens hop 1's span over the whole title and a following "'s <relation>", so that hop 2 reads
    "the date of birth of Rune Gerhardsen" instead of "... of Rune Gerhardsen Gerhardsen's father"."""
    if len(golds) != 2:
        raise Reject(R_GOLD_COUNT, f"{len(golds)} gold paragraphs")
    ids = [chunk_id_of(g, lookup) for g in golds]
    question = example.question
    answer = example.answer.strip()
    if qtype == "bridge" and _names_both(question, golds):
        qtype = "comparison"  # annotation noise: "Who is older, A or B?" typed as bridge
    if qtype == "comparison":
        subs = [
            SubQuestion(n + 1, f"Regarding {g.title}: {question}", answer, [], ids[n])
            for n, g in enumerate(golds)
        ]
        return Decomposition(subs, qtype)
    if qtype != "bridge":
        raise Reject(R_MALFORMED, f"unknown HotpotQA type {qtype!r}")
    first = _hop_one(question, golds)
    second = 1 - first
    hop1, hop2 = golds[first], golds[second]
    bridge = _mention(hop1, hop2.title) or short_title(hop2.title)
    q_words = split_words(question)
    a, b = _hop_one_span(q_words, hop1, hop2)
    if possessive_relations:
        a, b = _widen_to_relation(q_words, hop1, a, b)
    span_text = join_words(q_words[a : b + 1])
    sub1 = f"Who or what is {span_text}?"
    sub2 = join_words([*q_words[:a], *split_words(bridge), *q_words[b + 1 :]])
    subs = [
        SubQuestion(1, sub1, bridge, [], ids[first]),
        SubQuestion(2, sub2, answer, [1], ids[second]),
    ]
    return Decomposition(subs, qtype)


def chunk_id_of(gold: RawParagraph, lookup: ChunkLookup) -> str:
    chunk_id = lookup.find(gold.title, gold.text)
    if chunk_id is None:
        raise Reject(R_NOT_IN_CORPUS, f"paragraph {gold.title!r}")
    return chunk_id


def mention(p: RawParagraph, title: str) -> str | None:
    """The words by which paragraph ``p`` mentions ``title`` (its short form), or None."""
    return _mention(p, title)


def names(question: str, p: RawParagraph) -> bool:
    """Whether the question names the paragraph's (short) title."""
    return bool(find_phrase_spans(split_words(question), split_words(short_title(p.title))))


def paragraph(example: Example, chunk: Chunk) -> RawParagraph | None:
    target = dedup_key(chunk.contents)
    for g in all_paragraphs(example.raw):
        if dedup_key(f"{g.title}: {g.text}") == target or dedup_key(g.text) == dedup_key(chunk.text):
            return g
    return None


def short_title(title: str) -> str:
    """Wikipedia title without its disambiguation: "Kiss and Tell (1945 film)" -> "Kiss and Tell"."""
    return _PAREN.sub("", title).strip() or title


def infer_type(question: str, answer: str, golds: list[RawParagraph]) -> str:
    if normalize_answer(answer) in YES_NO or _names_both(question, golds):
        return "comparison"
    return "bridge"


def _names_both(question: str, golds: list[RawParagraph]) -> bool:
    q_words = split_words(question)
    return all(find_phrase_spans(q_words, split_words(short_title(g.title))) for g in golds)


def gold_paragraphs(raw: dict[str, Any]) -> list[RawParagraph]:
    """Paragraphs with supporting facts (``support`` is not None; empty for IRCoT's
    paragraph-level flag)."""
    return [p for p in all_paragraphs(raw) if p.support is not None]


def all_paragraphs(raw: dict[str, Any]) -> list[RawParagraph]:
    if "contexts" in raw:
        out = []
        for n, c in enumerate(field_of(raw, "contexts", list)):
            if not isinstance(c, dict):
                raise Reject(R_MALFORMED, f"contexts[{n}] is not an object")
            # Paragraph-level support only: mark gold paragraphs with an empty sentence list.
            support = () if c.get("is_supporting") else None
            out.append(
                RawParagraph(str(c.get("title") or ""), str(c.get("paragraph_text") or ""), None, support)
            )
        return out
    context = field_of(raw, "context", list)
    facts = field_of(raw, "supporting_facts", list)
    support: dict[str, list[int]] = {}
    for sf in facts:
        if isinstance(sf, (list, tuple)) and len(sf) == 2:
            support.setdefault(str(sf[0]), []).append(int(sf[1]))
    out = []
    seen: set[str] = set()
    for n, entry in enumerate(context):
        if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[1], list)):
            raise Reject(R_MALFORMED, f"context[{n}] is not [title, [sentences]]")
        title, sentences = str(entry[0]), tuple(str(s) for s in entry[1])
        sup = tuple(support[title]) if title in support and title not in seen else None
        seen.add(title)
        out.append(RawParagraph(title, join_sentences(sentences), sentences, sup))
    return out


def _hop_one(question: str, golds: list[RawParagraph]) -> int:
    mentions = [bool(_mention(golds[n], golds[1 - n].title)) for n in (0, 1)]
    if mentions[0] != mentions[1]:
        return 0 if mentions[0] else 1
    q_words = split_words(question)
    named = [bool(find_phrase_spans(q_words, split_words(short_title(g.title)))) for g in golds]
    if named[0] != named[1]:
        return 0 if named[0] else 1
    how = "both mention" if mentions[0] else "neither mentions"
    raise Reject(
        R_AMBIGUOUS, f"{how} the other's title; the question names {'both' if named[0] else 'neither'}"
    )


def _mention(p: RawParagraph, title: str) -> str | None:
    """The words by which paragraph ``p`` mentions ``title`` (its short form), or None."""
    words = split_words(p.text)
    spans = find_phrase_spans(words, split_words(short_title(title)))
    if not spans:
        return None
    first, last = spans[0]
    return join_words(words[first : last + 1])


def _hop_one_span(q_words: list[str], hop1: RawParagraph, hop2: RawParagraph) -> tuple[int, int]:
    """The question span that asks about hop 1's paragraph: from the first to the last question
    content word found in hop 1 but not in hop 2 (or in hop 1 at all), widened to a preceding
    relative clause ("the woman who portrayed ...") or determiner."""
    keys1 = {loose_key(w) for w in split_words(f"{hop1.title} {hop1.text}")}
    keys2 = {loose_key(w) for w in split_words(f"{hop2.title} {hop2.text}")}
    content = [i for i, w in enumerate(q_words) if is_content(w)]
    only1 = [i for i in content if loose_key(q_words[i]) in keys1 and loose_key(q_words[i]) not in keys2]
    in1 = only1 or [i for i in content if loose_key(q_words[i]) in keys1]
    if not in1:
        raise Reject(R_AMBIGUOUS, "the question shares no word with the hop-1 paragraph")
    a, b = min(in1), max(in1)
    for r in range(a - 1, max(-1, a - 4), -1):
        if q_words[r].lower() in _RELATIVE:
            a = r
            for d in range(r - 1, max(-1, r - 4), -1):
                if q_words[d].lower() in _DETERMINERS:
                    a = d
                    break
            break
    else:
        if a > 0 and q_words[a - 1].lower() in _DETERMINERS:
            a -= 1
    # Keep quotation marks paired: 'the comedy "Big Stone Gap"' rather than 'the comedy "Big Stone Gap'.
    quotes = sum(1 for w in q_words[a : b + 1] if w in _QUOTES)
    if quotes % 2 and b + 1 < len(q_words) and q_words[b + 1] in _QUOTES:
        b += 1
    elif quotes % 2 and a > 0 and q_words[a - 1] in _QUOTES:
        a -= 1
    return a, b


def _widen_to_relation(q_words: list[str], hop1: RawParagraph, a: int, b: int) -> tuple[int, int]:
    for title in (hop1.title, short_title(hop1.title)):
        spans = [
            sp for sp in find_phrase_spans(q_words, split_words(title)) if sp[0] <= b + 1 and sp[1] >= a - 1
        ]
        if spans:
            a, b = min(a, spans[0][0]), max(b, spans[0][1])
            break
    if "(" in q_words[a : b + 1] and ")" not in q_words[a : b + 1] and ")" in q_words[b + 1 :]:
        b = q_words.index(")", b + 1)
    possessive = b + 1 < len(q_words) and q_words[b + 1] == "'s"
    # "the director of film X": the relation before the title belongs to hop 1 (up to "the").
    start = a - 1 if a >= 2 and q_words[a - 1].islower() and q_words[a - 2] == "of" else a
    if not possessive and start >= 1 and q_words[start - 1] == "of":
        r = start - 2
        while r >= 0 and q_words[r].islower() and q_words[r] not in _STOP_LEFT | _DETERMINERS:
            r -= 1
        if r >= 0 and r < start - 2 and q_words[r].lower() in _DETERMINERS:
            a = r
    # "X's father": the relation after the title too.
    if possessive:
        end = b + 2
        while end < len(q_words) and q_words[end].lower() not in _STOP_RIGHT and end < b + 5:
            end += 1
        if end > b + 2:
            b = end - 1
    return a, b


_STOP_LEFT = {"is", "was", "are", "were", "did", "does", "do", "of", "when", "where", "who", "what", "which"}
_STOP_RIGHT = {"?", ".", ",", "'s", "die", "died", "born", "is", "was", "from", "live", "work"}
