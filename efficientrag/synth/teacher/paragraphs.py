"""From a dataset's raw paragraphs to pooled chunks, and from chunk words to sentences.

Readers pool paragraphs into a de-duplicated corpus, so a raw paragraph's list position says
nothing about its chunk id; it is found by content (the same ``dedup_key`` the pooling used).
Sentence boundaries come from the raw record where it has them (2Wiki, HotpotQA distractor:
lists of sentences, which is also what their sentence-level supporting facts index) and from a
punctuation rule otherwise (MuSiQue, HotpotQA IRCoT).
"""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk
from efficientrag.synth.phrases import sentence_ranges
from efficientrag.text.normalize import dedup_key
from efficientrag.text.words import split_words


class ChunkLookup:
    """Raw paragraph (title, text) -> pooled chunk id, built once per corpus."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self._by_contents: dict[str, str] = {}
        by_text: dict[str, list[str]] = {}
        for chunk in corpus:
            self._by_contents.setdefault(dedup_key(chunk.contents), chunk.id)
            by_text.setdefault(dedup_key(chunk.text), []).append(chunk.id)
        # Text alone identifies a chunk only when no two chunks share it.
        self._by_text = {k: ids[0] for k, ids in by_text.items() if len(ids) == 1}

    def find(self, title: str, text: str) -> str | None:
        contents = f"{title}: {text}" if title else text
        hit = self._by_contents.get(dedup_key(contents))
        if hit is None:
            hit = self._by_text.get(dedup_key(text))
        return hit

    def chunk(self, chunk_id: str) -> Chunk:
        return self.corpus.get(chunk_id)


@dataclass(frozen=True)
class RawParagraph:
    """One paragraph as the dataset gave it. ``sentences`` is None when the format has only a
    text; ``support`` lists the supporting sentence numbers, None when not annotated."""

    title: str
    text: str
    sentences: tuple[str, ...] | None = None
    support: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ChunkLayout:
    """The chunk's words and their sentences. ``sentences`` are half-open word ranges; the first
    covers the ``"Title:"`` prefix. ``support`` are indices into ``sentences`` (None: unknown)."""

    words: list[str]
    sentences: list[tuple[int, int]]
    support: list[int] | None
    title_words: int


def chunk_layout(chunk: Chunk, paragraph: RawParagraph | None = None) -> ChunkLayout:
    words = split_words(chunk.contents)
    title_words = len(split_words(f"{chunk.title}:")) if chunk.title else 0
    if title_words > len(words) or (title_words and words[title_words - 1][-1:] != ":"):
        title_words = 0
    if paragraph is not None and paragraph.sentences:
        ranges, support = _given_sentences(words, title_words, paragraph)
        if ranges is not None:
            return ChunkLayout(words, ranges, support, title_words)
    return ChunkLayout(words, sentence_ranges(words, title_words=title_words), None, title_words)


def _given_sentences(
    words: list[str], title_words: int, paragraph: RawParagraph
) -> tuple[list[tuple[int, int]] | None, list[int] | None]:
    """Word ranges of the raw sentences, when splitting them one by one reproduces the chunk's
    words exactly (spaCy splits on whitespace first, so it should); else None."""
    ranges: list[tuple[int, int]] = [(0, title_words)] if title_words else []
    pos = title_words
    sentence_to_range: dict[int, int] = {}
    for n, sentence in enumerate(paragraph.sentences or ()):
        sw = split_words(sentence)
        if not sw:
            continue
        if words[pos : pos + len(sw)] != sw:
            return None, None
        sentence_to_range[n] = len(ranges)
        ranges.append((pos, pos + len(sw)))
        pos += len(sw)
    if pos != len(words):
        return None, None
    support = None
    if paragraph.support is not None:
        support = sorted({sentence_to_range[s] for s in paragraph.support if s in sentence_to_range})
    return ranges, support
