"""A scripted "LLM" for the synthesis teacher's tests and benchmark: it reads the prompt the
teacher sent and writes the JSON reply a careful model would, so a run against the fake server
produces real training rows. Nothing is looked up elsewhere; everything comes from the prompt:

- decompose: from the annotated steps the prompt shows (MuSiQue and the toy world): ``#k``
  replaced by answer k, ``"X >> relation"`` turned into a question, dependencies from the ``#k``,
  the paragraph from "(paragraph n)". Without annotated steps it answers in prose (the teacher
  then rejects the record), so the oracle is for MuSiQue-format data only.
- label: the words of the paragraph's sentence holding the answer that are the answer or a
  content word of the sub-question, in paragraph order.
- next hop: the annotation teacher's rule (``synth.next_hop.teacher_next_hop``) applied to the
  question and known information written in the prompt.

:class:`SynthOracle` can also misbehave on purpose, for a deterministic share of records (by a
hash of the question or sub-question): a dependency cycle, one sub-question too few, invented
label words. Some replies come in code fences or with chatter around the JSON. Use it in-process
(``FakeOpenAIServer(SynthOracle(...))``) or by name from the command line
(``python -m efficientrag.testing.fake_openai --script efficientrag.testing.synth_oracle:respond``).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from efficientrag.synth.next_hop import teacher_next_hop
from efficientrag.synth.phrases import (
    find_phrase_spans,
    is_content,
    loose_content_keys,
    loose_key,
    range_of,
    sentence_ranges,
)
from efficientrag.synth.prompts.render import STEPS_HEADER
from efficientrag.synth.records import Reject, SubQuestion
from efficientrag.synth.teacher.base import DependencyInfo
from efficientrag.synth.teacher.relations import relation_question
from efficientrag.testing.fake_completions import request_text
from efficientrag.text.words import join_words, split_words

_STEP = re.compile(r"^(\d+)\. (.*) -> (.*?)(?: \(paragraph (\d+)\))?$")
_REF = re.compile(r"#(\d+)")
INVENTED = "according to the zorblax registry"


class SynthOracle:
    """The responder. ``cycle_every``/``drop_every``/``invent_every`` = n makes roughly one record
    in n misbehave (0: never); ``wrap_every`` = n wraps one reply in n in fences or chatter."""

    def __init__(
        self, *, cycle_every: int = 0, drop_every: int = 0, invent_every: int = 0, wrap_every: int = 3
    ) -> None:
        self.cycle_every = cycle_every
        self.drop_every = drop_every
        self.invent_every = invent_every
        self.wrap_every = wrap_every

    def __call__(self, request: dict[str, Any]) -> str:
        text = request_text(request)
        fields = _fields(text)
        if "Sub-question" in fields and "Paragraph" in fields:
            key, obj = fields["Sub-question"], self.label(fields)
        elif "Answered" in fields:
            key, obj = fields["Question"], self.next_hop(text)
        elif "Paragraphs" in fields:
            key = fields.get("Question", "")
            obj = self.decompose(text, key)
            if obj is None:
                return "I cannot split this question without annotated steps."
        else:
            return "I do not understand the request."
        return self._wrap(json.dumps(obj, ensure_ascii=False), key)

    # -- tasks ----------------------------------------------------------------------------------

    def decompose(self, text: str, question: str) -> dict[str, Any] | None:
        steps = _steps(text)
        if not steps:
            return None
        answers = [a for _, a, _ in steps]
        subs: dict[str, dict[str, Any]] = {}
        for k, (q, a, paragraph) in enumerate(steps, start=1):
            deps = sorted({int(m) for m in _REF.findall(q)})
            resolved = _REF.sub(lambda m: _answer(answers, int(m.group(1)), m.group(0)), q)
            if ">>" in resolved:
                subject, relation = resolved.split(">>", 1)
                resolved = relation_question(subject.strip(), [relation.strip()])
            subs[str(k)] = {"sub_question": resolved, "answer": a, "dependency": deps, "document": paragraph}
        n = len(subs)
        if n >= 2 and _hit(question, "cycle", self.cycle_every):
            subs["1"]["dependency"] = [n]
            subs[str(n)]["dependency"] = sorted({*subs[str(n)]["dependency"], 1})
        elif n >= 2 and _hit(question, "drop", self.drop_every):
            subs.pop(str(n))
        return {"decomposed_questions": subs}

    def label(self, fields: dict[str, str]) -> dict[str, Any]:
        sub_question, answer = fields["Sub-question"], fields.get("Answer", "")
        if _hit(sub_question, "invent", self.invent_every):
            return {"extracted_words": f"{answer} {INVENTED}"}
        return {"extracted_words": " ".join(evidence_words(fields["Paragraph"], sub_question, answer))}

    def next_hop(self, text: str) -> dict[str, Any]:
        question, pairs = _next_hop_fields(text)
        deps = [
            DependencyInfo(SubQuestion(i, sq, answer, [], ""), [], split_words(info))
            for i, (sq, answer, info) in enumerate(pairs, start=1)
        ]
        prev = split_words(question)
        try:
            words = teacher_next_hop(prev, deps)
        except Reject:
            words = prev + [w for d in deps for w in d.info_words]
        return {"filtered_query": join_words(words)}

    def _wrap(self, body: str, key: str) -> str:
        if not _hit(key, "wrap", self.wrap_every):
            return body
        if _hit(key, "fence", 2):
            return f"```json\n{body}\n```"
        return f"Sure, here is the JSON you asked for:\n{body}\nLet me know if anything is unclear."


def evidence_words(paragraph: str, sub_question: str, answer: str) -> list[str]:
    """The sentence of the answer's first mention after the title, cut down to the answer and
    the sub-question's content words."""
    words = split_words(paragraph)
    title, sep, _ = paragraph.partition(": ")
    title_words = len(split_words(f"{title}:")) if sep else 0
    spans = find_phrase_spans(words, split_words(answer), start=title_words)
    keys = loose_content_keys(split_words(sub_question))
    if not spans:
        return [w for w in words[title_words:] if is_content(w) and loose_key(w) in keys]
    first, last = spans[0]
    ranges = sentence_ranges(words, title_words=title_words)
    start, end = ranges[range_of(ranges, first)]
    keep = [
        i
        for i in range(start, end)
        if first <= i <= last or (is_content(words[i]) and loose_key(words[i]) in keys)
    ]
    return [words[i] for i in keep]


def respond(request: dict[str, Any]) -> str:
    """A well-behaved oracle, for ``fake_openai --script efficientrag.testing.synth_oracle:respond``."""
    return _DEFAULT(request)


_DEFAULT = SynthOracle(wrap_every=0)


# -- prompt parsing ---------------------------------------------------------------------------


_FIELD_NAMES = frozenset(
    {
        "Question",
        "Final answer",
        "Question type",
        "Paragraphs",
        "Sub-question",
        "Answer",
        "Paragraph",
        "Answered",
    }
)


def _fields(text: str) -> dict[str, str]:
    """``Name: value`` lines of a user message (the first of each name)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name in _FIELD_NAMES:
            out.setdefault(name, value.strip())
    return out


def _steps(text: str) -> list[tuple[str, str, int | None]]:
    lines = text.splitlines()
    if STEPS_HEADER not in lines:
        return []
    out = []
    for line in lines[lines.index(STEPS_HEADER) + 1 :]:
        m = _STEP.match(line)
        if not m:
            break
        out.append((m.group(2), m.group(3), int(m.group(4)) if m.group(4) else None))
    return out


def _next_hop_fields(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    question = ""
    pairs: list[tuple[str, str, str]] = []
    pending: tuple[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("Question: "):
            question = line[len("Question: ") :]
        elif line.startswith("Answered: "):
            sq, _, answer = line[len("Answered: ") :].rpartition(" -> ")
            pending = (sq, answer)
        elif line.startswith("Known information: ") and pending is not None:
            pairs.append((*pending, line[len("Known information: ") :]))
            pending = None
    return question, pairs


def _answer(answers: list[str], k: int, fallback: str) -> str:
    return answers[k - 1] if 1 <= k <= len(answers) and answers[k - 1] else fallback


def _hit(key: str, salt: str, every: int) -> bool:
    if every <= 0:
        return False
    digest = hashlib.sha256(f"{salt}:{key}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % every == 0
