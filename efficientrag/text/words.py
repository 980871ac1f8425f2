"""Word splitting with spaCy's English tokenizer: the unit of every label in the project.

Training data labels words, models predict per word, and the pipeline turns predicted words
back into text, so all three must split text the same way. Only the tokenizer is used for
splitting (it is identical in ``spacy.blank("en")`` and ``en_core_web_sm``); lemmas, used by
alignment, come from ``en_core_web_sm`` when it is installed and fall back to lower-cased text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

import spacy
from spacy.language import Language


@lru_cache(maxsize=1)
def blank_english() -> Language:
    return spacy.blank("en")


@lru_cache(maxsize=1)
def lemmatizer() -> Language | None:
    """``en_core_web_sm`` without the parser/NER, or None when it is not installed."""
    try:
        return spacy.load("en_core_web_sm", exclude=["parser", "ner"])
    except (OSError, ImportError):
        return None


def split_words(text: str) -> list[str]:
    return [t.text for t in blank_english().tokenizer(text) if not t.is_space]


def split_words_batch(texts: Iterable[str], batch_size: int = 256) -> list[list[str]]:
    tok = blank_english().tokenizer
    return [[t.text for t in doc if not t.is_space] for doc in tok.pipe(texts, batch_size=batch_size)]


def word_lemmas(words: Sequence[str]) -> list[str]:
    """Lower-cased lemmas for already split words (lower-cased text when no lemmatizer)."""
    nlp = lemmatizer()
    if nlp is None or not words:
        return [w.lower() for w in words]
    from spacy.tokens import Doc

    doc = Doc(nlp.vocab, words=list(words))
    for _, proc in nlp.pipeline:
        doc = proc(doc)
    return [(t.lemma_ or t.text).lower() for t in doc]


def join_words(words: Sequence[str]) -> str:
    """Words back to a readable string (spaces between words, none before closing punctuation)."""
    out: list[str] = []
    for w in words:
        if out and (w in {",", ".", ";", ":", "?", "!", ")", "'s", "%"} or out[-1] in {"(", "$"}):
            out[-1] = out[-1] + w
        else:
            out.append(w)
    return " ".join(out)
