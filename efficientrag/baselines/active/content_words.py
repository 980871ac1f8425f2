"""Which words carry meaning: DRAGIN's semantic indicator s_i and its QFS word filter.

The paper (Eq. 4) zeroes stopwords, from spaCy's English list. The official code instead keeps
words whose part of speech is NOUN, ADJ, VERB, PROPN or NUM, tagged by ``en_core_web_sm``. The POS
filter is used only when that model is installed; otherwise it falls back to the stopword rule
and says so once in the log (and :func:`pos_tagger_available` lets a run record it).

Both rules also drop tokens with no letter or digit (punctuation, whitespace): the stopword list
does not contain punctuation, but a "." carries no information need, and the official POS filter
excludes PUNCT as well.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language

log = logging.getLogger(__name__)

CONTENT_POS = frozenset({"NOUN", "ADJ", "VERB", "PROPN", "NUM"})
_EDGE_PUNCT = re.compile(r"^\W+|\W+$")
_WORD = re.compile(r"\S+")


def word_spans(text: str) -> list[tuple[int, int]]:
    """Whitespace-separated words (punctuation stays attached, as in the official code's merging
    of sub-tokens at the SentencePiece space marker)."""
    return [m.span() for m in _WORD.finditer(text)]


def bare(word: str) -> str:
    """A word without leading/trailing punctuation, lower-cased."""
    return _EDGE_PUNCT.sub("", word).lower()


def is_content_word(word: str) -> bool:
    """The paper's indicator: not a stopword, and containing a letter or digit."""
    core = bare(word)
    return bool(core) and any(ch.isalnum() for ch in core) and core not in _stop_words()


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    # spaCy is imported on first use: importing it takes seconds, and every method module is
    # imported whenever an experiment config is loaded.
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


@lru_cache(maxsize=1)
def _pos_tagger() -> Language | None:
    import spacy

    try:
        return spacy.load("en_core_web_sm", exclude=["parser", "ner", "lemmatizer"])
    except (OSError, ImportError):
        log.warning(
            "en_core_web_sm is not installed: DRAGIN's official POS filter falls back to the stopword "
            "rule (pip install en_core_web_sm to use it)"
        )
        return None


def pos_tagger_available() -> bool:
    return _pos_tagger() is not None


def content_flags_pos(text: str, spans: Sequence[tuple[int, int]]) -> list[bool]:
    """The official rule for each word span of ``text``: some spaCy token inside it is tagged
    NOUN/ADJ/VERB/PROPN/NUM (the stopword rule when the tagger is missing)."""
    tagger = _pos_tagger()
    if tagger is None:
        return [is_content_word(text[a:b]) for a, b in spans]
    doc = tagger(text)
    content = [(t.idx, t.idx + len(t.text)) for t in doc if t.pos_ in CONTENT_POS]
    return [any(a <= s and e <= b for s, e in content) for a, b in spans]


def content_flags_stopwords(text: str, spans: Sequence[tuple[int, int]]) -> list[bool]:
    """The paper's rule for each word span: some spaCy token inside it is a content word."""
    from efficientrag.text.words import blank_english

    tokens = [(t.idx, t.idx + len(t.text), t.text) for t in blank_english().tokenizer(text)]
    return [any(a <= s and e <= b and is_content_word(w) for s, e, w in tokens) for a, b in spans]
