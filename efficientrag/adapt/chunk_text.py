"""A chunk as the models read it (``title: text`` split into words), with its sentences.

Pseudo rows label chunk words by position, so the words must be exactly the ones the Labeler sees
at inference (:func:`efficientrag.text.words.split_words` over ``Chunk.contents``). The title part
is not always ``split_words(title) + [":"]`` (``"Lewis (filmmaker): ..."`` gives ``"):"``), so the
text's first word is found from character offsets instead. Sentences come from spaCy's rule-based
sentencizer, which needs no trained pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import spacy
from spacy.language import Language

from efficientrag.data.schema import Chunk
from efficientrag.errors import InvalidArgumentError


@dataclass(frozen=True)
class ChunkText:
    id: str
    title: str
    words: tuple[str, ...]
    text_start: int  # index of the first word of the text (after the title and its colon)
    sentences: tuple[tuple[int, int], ...]  # [start, end) word spans covering the text part

    def sentence_of(self, position: int) -> tuple[int, int]:
        for start, end in self.sentences:
            if start <= position < end:
                return start, end
        raise InvalidArgumentError(f"chunk {self.id}: word {position} is not in the text part")


@lru_cache(maxsize=1)
def _sentencizer() -> Language:
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def chunk_texts(chunks: Sequence[Chunk], *, batch_size: int = 256) -> Iterator[ChunkText]:
    """One :class:`ChunkText` per chunk, in order (streamed: a large corpus is never held twice)."""
    nlp = _sentencizer()
    contents = (c.contents for c in chunks)
    for chunk, doc in zip(chunks, nlp.pipe(contents, batch_size=batch_size), strict=True):
        text_char = len(chunk.title) + 2 if chunk.title else 0
        words: list[str] = []
        position: dict[int, int] = {}  # spaCy token index -> word index (spaces are not words)
        text_start = None
        for tok in doc:
            if tok.is_space:
                continue
            if text_start is None and tok.idx >= text_char:
                text_start = len(words)
            position[tok.i] = len(words)
            words.append(tok.text)
        if text_start is None:
            text_start = len(words)
        sentences = []
        for sent in doc.sents:
            idx = [position[t.i] for t in sent if t.i in position]
            if not idx:
                continue
            start, end = max(idx[0], text_start), idx[-1] + 1
            if start < end:
                sentences.append((start, end))
        yield ChunkText(chunk.id, chunk.title, tuple(words), text_start, tuple(sentences))
