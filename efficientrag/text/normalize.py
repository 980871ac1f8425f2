"""Text normalizations: one for de-duplicating passages, one (SQuAD's) for comparing answers."""

from __future__ import annotations

import re
import string
import unicodedata

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def dedup_key(text: str) -> str:
    """Two passages are the same chunk when they agree after casefolding and dropping non-word
    characters (the official EfficientRAG corpus builder strips non-word characters the same way)."""
    return _NON_WORD.sub("", unicodedata.normalize("NFKC", text).casefold())


def normalize_answer(text: str) -> str:
    """SQuAD normalization: lowercase, drop punctuation and articles, squeeze whitespace."""
    text = unicodedata.normalize("NFKC", str(text)).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())
