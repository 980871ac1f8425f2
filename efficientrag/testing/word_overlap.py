"""A deterministic lexical retriever for tests of code that sits on top of retrieval.

Score = number of distinct lower-cased words shared by query and chunk contents; ties go to the
earlier chunk. It implements the Retriever protocol exactly, with no model to load.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from efficientrag.data.corpus import Corpus
from efficientrag.retrieval.base import Hit

_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class WordOverlapRetriever:
    def __init__(self, corpus: Corpus, stopwords: Sequence[str] = ()) -> None:
        self.corpus = corpus
        self._stop = {w.lower() for w in stopwords}
        self._chunk_words = [_words(c.contents) - self._stop for c in corpus]
        self.queries: list[str] = []

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        out = []
        for q in queries:
            self.queries.append(q)
            qw = _words(q) - self._stop
            scored = sorted(((len(qw & cw), -i) for i, cw in enumerate(self._chunk_words)), reverse=True)[
                : max(0, k)
            ]
            out.append([Hit(self.corpus[-neg], float(s)) for s, neg in scored])
        return out
