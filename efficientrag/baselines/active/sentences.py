"""Sentence boundaries of generated text, and the token counts that reach them.

FLARE keeps the first sentence of each look-ahead (the paper uses NLTK's Punkt tokenizer), DRAGIN
scores and discards whole sentences (the official code uses spaCy ``en_core_web_sm``). Punkt's
model cannot be downloaded on an offline machine, so both use spaCy's rule-based
``sentencizer`` on a blank English pipeline: it splits after ".", "!" and "?" tokens, and spaCy's
tokenizer keeps abbreviations such as "St." and "U.S." whole, so they do not end a sentence.

Generated text is handled as the token pieces the generator returned (they concatenate exactly to
the text), so a cut at a sentence boundary is a cut at a token boundary: the kept text is always
the concatenation of the kept tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language

_PIECES = re.compile(r"\s*\S+|\s+")
_TERMINAL = re.compile(r"[.!?][\"')\]]*\s*$")
_ANSWER_PHRASE = re.compile(r"so\s+the\s+answer\s+is", re.IGNORECASE)


@lru_cache(maxsize=1)
def sentencizer() -> Language:
    import spacy  # on first use: importing it takes seconds (see content_words)

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of the sentences that contain more than whitespace; the
    start skips leading whitespace, the end is just past the sentence's last character."""
    spans = []
    for sent in sentencizer()(text).sents:
        body = sent.text
        if not body.strip():
            continue
        start = sent.start_char + (len(body) - len(body.lstrip()))
        spans.append((start, sent.end_char))
    return spans


def word_pieces(text: str) -> list[str]:
    """Whitespace-led words (``"".join(word_pieces(t)) == t``): the stand-in for tokens when an API
    returned none (budgets then count these words)."""
    return _PIECES.findall(text)


def is_complete(sentence: str) -> bool:
    """Ends with sentence-final punctuation (possibly followed by a closing quote or bracket)."""
    return bool(_TERMINAL.search(sentence))


def first_sentence_end(text: str) -> int | None:
    """Where the first sentence of ``text`` ends, or None when ``text`` is (at most) one sentence
    that is not finished yet."""
    spans = sentence_spans(text)
    if not spans:
        return None
    end = spans[0][1]
    if len(spans) > 1 or is_complete(text[spans[0][0] : end]):
        return end
    return None


def tokens_through(pieces: Sequence[str], char_end: int) -> int:
    """The fewest leading pieces whose text reaches character ``char_end`` (a piece that straddles
    the boundary is kept whole)."""
    pos = 0
    for i, piece in enumerate(pieces):
        if pos >= char_end:
            return i
        pos += len(piece)
    return len(pieces)


def tokens_before(pieces: Sequence[str], char: int) -> int:
    """How many leading pieces end at or before character ``char``."""
    pos = 0
    for i, piece in enumerate(pieces):
        if pos + len(piece) > char:
            return i
        pos += len(piece)
    return len(pieces)


def answer_sentence_end(text: str, finished: bool) -> int | None:
    """Where the sentence that gives the answer ("So the answer is ...") ends, once it is complete:
    followed by another sentence, ending in final punctuation, or ``finished`` (the model stopped).
    None while there is no such sentence or it may still go on."""
    match = _ANSWER_PHRASE.search(text)
    if match is None:
        return None
    spans = sentence_spans(text)
    for i, (start, end) in enumerate(spans):
        if end <= match.start():
            continue
        if i + 1 < len(spans) or finished or is_complete(text[start:end]):
            return end
        return None
    return len(text) if finished else None


def says_answer(text: str) -> bool:
    return _ANSWER_PHRASE.search(text) is not None
