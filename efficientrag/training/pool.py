"""A training file as a model trains on it: its pooled corpus, its questions and the index over them.

TreeHop and the cross-encoder reranker both train per training file, each file pooled into its own
corpus with its own search (the honest protocol's setting), so negatives and validation searches
never reach another file's paragraphs. The pools are opened by
:func:`efficientrag.experiment.pools.open_pool`, a level above the training code that takes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.errors import ConfigError


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


def require_pools(pools: list[Pool] | None, trainer: str) -> list[Pool]:
    """The pools a trainer was given; it never opens them itself (that reads the experiment's data
    preparation, a layer above training).

    Args:
        pools: What the caller passed.
        trainer: The training function's name, for the error.

    Raises:
        ConfigError: None was passed.
    """
    if pools is None:
        raise ConfigError(
            f"{trainer} needs pools=: open them with efficientrag.experiment.pools.open_pools"
            "(cfg.train_sets, cfg.retriever, cfg.work_dir)"
        )
    return pools
