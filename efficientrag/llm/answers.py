"""Pull the final answer out of what a generator wrote; one function for every method.

The methods ask for different formats: EfficientRAG's prompts and its baselines ask for JSON
``{"answer": ...}``; FLARE, DRAGIN and the CoT exemplars end with "So the answer is X."; Self-Ask
ends with "So the final answer is: X". Models follow these loosely (code fences, chatter after
the answer, quotes, a sentence-final period), so extraction is lenient, and it never raises: a
reply that ignores the format still yields a best guess (its last line), and
:func:`extract_answer_detailed` says which rule produced it, so a run can count format failures.

Small models (SmolLM2-135M-Instruct, docs/real_llm.md) break the format in their own ways, each
handled here with a test built on the real output: a JSON reply cut off by the token limit
(``{"answer": "Georgia Tech Georgia Tech ...``: the value is read up to where it stops, source
``json_partial``), and a phrase repeated in a loop until the limit (kept once: a phrase written
three or more times in a row is a decoding loop, not an answer; two times is kept, for "Walla
Walla").

Periods are the hard part: "So the answer is St. Louis." must give "St. Louis" and "... is the
U.S." must keep "U.S.", while "... is Paris. The city ..." must stop at "Paris". A period ends
the answer only when whitespace and more text (or the end) follow it and the word before it is
not an abbreviation or initial.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from efficientrag.errors import InvalidArgumentError
from efficientrag.llm.errors import LLMOutputError
from efficientrag.llm.json_output import parse_json_output

AnswerStyle = Literal["auto", "json", "so_the_answer_is", "self_ask", "raw"]
STYLES = ("auto", "json", "so_the_answer_is", "self_ask", "raw")

# Words that end in a period without ending the sentence (compared without the period, lowercased).
ABBREVIATIONS = frozenset(
    {
        "st", "mt", "ft", "mr", "mrs", "ms", "dr", "prof", "jr", "sr", "gen", "col", "lt", "sgt",
        "capt", "gov", "sen", "rep", "rev", "co", "corp", "inc", "ltd", "bros", "vs", "etc", "approx",
        "jan", "feb", "mar", "apr", "aug", "sept", "sep", "oct", "nov", "dec", "ave", "blvd", "no",
    }
)  # fmt: skip

_FINAL = re.compile(r"so\s+the\s+final\s+answer\s+is\s*:?", re.IGNORECASE)
_SO_ANSWER = re.compile(r"so\s+the\s+(?:final\s+)?answer\s+is\s*:?", re.IGNORECASE)
# "The answer is X", also "The answer to this question is: X" (SmolLM2's opening).
_ANY_ANSWER_IS = re.compile(
    r"\bthe\s+(?:final\s+)?answer\s+(?:to\s+(?:this|the|your)\s+question\s+)?is\s*:?", re.IGNORECASE
)
_ANSWER_LINE = re.compile(r"^\s*(?:final\s+)?answer\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_INITIALISM = re.compile(r"(?:\b[A-Za-z]\.){2,}$|\b[A-Z]\.$")
_PARTIAL_JSON_ANSWER = re.compile(r'"(?:final[ _])?answer"\s*:\s*"((?:[^"\\\n]|\\.)*)', re.IGNORECASE)
# A loop repeats a phrase this many times at least (counting a cut-off last copy as one).
LOOP_REPEATS = 3
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "`": "`", "**": "**", "*": "*"}


@dataclass(frozen=True)
class ExtractedAnswer:
    answer: str
    # Which rule found it: json, json_partial, self_ask, so_the_answer_is, answer_is, answer_line,
    # last_line, raw, empty.
    source: str

    @property
    def followed_format(self) -> bool:
        return self.source not in ("last_line", "empty")


def extract_answer(text: str | None, style: AnswerStyle = "auto") -> str:
    """The answer string (possibly empty). ``style`` names the format the prompt asked for; "auto"
    tries JSON, then "So the (final) answer is", then an "Answer:" line, then the last line."""
    return extract_answer_detailed(text, style).answer


def extract_answer_detailed(text: str | None, style: AnswerStyle = "auto") -> ExtractedAnswer:
    if style not in STYLES:
        raise InvalidArgumentError(f"answer style must be one of {STYLES}, got {style!r}")
    if text is None or not text.strip():
        return ExtractedAnswer("", "empty")
    if style == "raw":
        return ExtractedAnswer(clean_answer(text), "raw")
    attempts: list[tuple[str, Any]] = {
        "json": [("json", _from_json), ("json_partial", _from_partial_json)],
        "so_the_answer_is": [("so_the_answer_is", _after(_SO_ANSWER)), ("answer_is", _after(_ANY_ANSWER_IS))],
        "self_ask": [("self_ask", _after(_FINAL)), ("so_the_answer_is", _after(_SO_ANSWER))],
        "auto": [
            ("json", _from_json),
            ("json_partial", _from_partial_json),
            ("so_the_answer_is", _after(_SO_ANSWER)),
            ("answer_line", _answer_line),
            ("answer_is", _after(_ANY_ANSWER_IS, first=True)),
        ],
    }[style]
    for source, rule in attempts:
        found = rule(text)
        if found is not None:
            return ExtractedAnswer(found, source)
    if _ends_announcing(text):
        return ExtractedAnswer("", "empty")  # "The answer to this question is:" and nothing more
    return ExtractedAnswer(_last_line(text), "last_line")


def clean_answer(span: str) -> str:
    """Trim an answer span: outer whitespace, one pair of enclosing quotes or bold markers, and a
    sentence-final period (kept after an initialism like "U.S." or an abbreviation like "Jr.")."""
    ans = collapse_loop(span.strip())
    for _ in range(3):
        before = ans
        ans = ans.strip().rstrip(",;:")
        ans = _strip_final_period(ans)
        ans = _strip_quotes(ans)
        if ans == before:
            break
    return ans.strip()


def collapse_loop(text: str) -> str:
    """One copy of a word sequence that ``text`` repeats :data:`LOOP_REPEATS` or more times from its
    start (the last copy may be cut off by the token limit); other text unchanged."""
    words = text.split()
    n = len(words)
    for period in range(1, n // LOOP_REPEATS + 1):
        unit = words[:period]
        if all(words[i] == unit[i % period] for i in range(n)) and n >= LOOP_REPEATS * period:
            return " ".join(unit)
        # The cut-off copy may end inside a word ("... Georgia Te").
        if n > LOOP_REPEATS * period and all(words[i] == unit[i % period] for i in range(n - 1)):
            last = words[-1]
            if unit[(n - 1) % period].startswith(last):
                return " ".join(unit)
    return text


# -- rules ------------------------------------------------------------------------------------------


def _from_partial_json(text: str) -> str | None:
    """The "answer" value of a JSON object that never closes (the reply hit the token limit)."""
    matches = list(_PARTIAL_JSON_ANSWER.finditer(text))
    if not matches:
        return None
    raw = matches[-1].group(1)
    try:
        value = json.loads(f'"{raw}"')
    except ValueError:
        value = raw
    answer = clean_answer(value)
    return answer or None


def _from_json(text: str) -> str | None:
    if "{" not in text:
        return None
    try:
        obj = parse_json_output(text, expect=dict)
    except LLMOutputError:
        return None
    for key, value in obj.items():
        if isinstance(key, str) and key.strip().lower() in ("answer", "final_answer", "final answer"):
            return _json_value(value)
    return None


def _json_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_json_value(v) for v in value)
    if isinstance(value, (int, float)):
        return str(value)
    return clean_answer(str(value))


def _after(pattern: re.Pattern[str], *, first: bool = False):
    """The answer after the last match of ``pattern`` (exemplars echoed in the reply, or a retracted
    first answer, come earlier), or after the first with ``first``: the loose "the answer is"
    phrase, where a chatty model states its answer, then explains ("The answer is a collection of
    books ...")."""

    def rule(text: str) -> str | None:
        matches = list(pattern.finditer(text))
        for match in matches if first else reversed(matches):
            answer = _first_sentence(text[match.end() :])
            if answer:
                return answer
        return None

    return rule


def _ends_announcing(text: str) -> bool:
    """The reply announces an answer at its very end and stops there."""
    tail = text.rstrip()
    return any(m.end() >= len(tail) for p in (_SO_ANSWER, _ANY_ANSWER_IS) for m in p.finditer(tail))


def _answer_line(text: str) -> str | None:
    matches = list(_ANSWER_LINE.finditer(text))
    if not matches:
        return None
    answer = _first_sentence(matches[-1].group(1))
    return answer or None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return clean_answer(lines[-1]) if lines else ""


def _first_sentence(rest: str) -> str:
    """The answer at the start of ``rest``: up to the end of its line and of its first sentence."""
    rest = rest.lstrip(" \t")
    if rest.startswith("\n"):
        rest = rest.lstrip()
    line = rest.split("\n", 1)[0]
    end = _sentence_end(line)
    return clean_answer(line[:end] if end is not None else line)


def _sentence_end(line: str) -> int | None:
    """Index just past the sentence-final punctuation of the first sentence, if more text follows."""
    quote_open: str | None = None
    for i, ch in enumerate(line):
        if quote_open is not None:
            if ch == _QUOTES.get(quote_open, quote_open):
                quote_open = None
            continue
        if ch in ('"', "\u201c") and (i == 0 or not line[i - 1].isalnum()):
            quote_open = ch
            continue
        if ch in ".!?":
            after = line[i + 1 :]
            if after and not after[0].isspace():
                continue  # 3.5, U.S, example.com
            if not after.strip():
                return None  # the period ends the line: clean_answer decides whether to keep it
            if ch == "." and _is_abbreviation(line[: i + 1]):
                continue
            return i + 1
    return None


def _is_abbreviation(upto_period: str) -> bool:
    words = upto_period.split()
    if not words:
        return False
    word = words[-1].strip("\"'()[]")
    if _INITIALISM.search(word):
        return True
    return word[:-1].lower() in ABBREVIATIONS


def _strip_final_period(ans: str) -> str:
    if not ans.endswith("."):
        return ans
    if ans.endswith("..."):
        return ans.rstrip(".").rstrip()
    words = ans.split()
    last = words[-1] if words else ans
    if len(words) > 1 and _is_abbreviation(ans):
        return ans
    if _INITIALISM.search(last.strip("\"'")) and len(last.strip("\"'")) > 2:
        return ans  # "U.S." keeps its period; a lone "A." does not
    return ans[:-1]


def _strip_quotes(ans: str) -> str:
    for opener, closer in _QUOTES.items():
        if len(ans) > len(opener) + len(closer) and ans.startswith(opener) and ans.endswith(closer):
            return ans[len(opener) : -len(closer)].strip()
    return ans
