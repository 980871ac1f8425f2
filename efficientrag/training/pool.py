"""A training file as a model trains on it: its pooled corpus, its questions and the index over them.

TreeHop and the cross-encoder reranker both train per training file, each file pooled into its own
corpus with its own search (the honest protocol's setting), so negatives and validation searches
never reach another file's paragraphs. The pools are opened by
:func:`efficientrag.training.open_pools.open_pools`, or by a benchmark that shares its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example


@dataclass
class Pool:
    """One training file: its pooled corpus, its questions and the retriever over the corpus.

    Attributes:
        name: ``<i>-<dataset>``: unique within a run, and the folder the file is prepared in.
        corpus: The file's paragraphs, de-duplicated.
        examples: The file's questions.
        retriever: A :class:`efficientrag.retrieval.base.Retriever` over ``corpus``.
    """

    name: str
    corpus: Corpus
    examples: list[Example]
    retriever: Any
