"""EfficientRAG as a DSPy retriever, so a DSPy program's retrieval step is the multi-hop loop.

It is a ``dspy.Retrieve`` like DSPy's own retriever modules: a ``dspy.Module`` holds it as an
attribute and calls it with the question, ``self.retrieve(question).passages``, and gets the kept
chunks' ``"{title}: {text}"`` in the order they entered the pool. The whole hop loop runs inside that
call with no LLM call, so an optimizer compiling the program around it pays for the answer module
only. The Prediction also carries each passage's chunk id, title, Continue probability, hop and
query, and the per-hop trace.

Optimizers copy a program (``deepcopy``) for every candidate they try. The loop has nothing to learn,
so copies share it instead of duplicating the models and the index.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

try:
    import dspy
except ImportError as exc:
    from efficientrag.pipeline.adapters import missing_extra

    raise missing_extra("efficientrag.pipeline.dspy", "dspy>=3.2", "dspy", exc) from exc

from efficientrag.pipeline.adapters import FromPretrained, groups, kept_chunks
from efficientrag.pipeline.efficientrag import EfficientRAG, RetrievalResult
from efficientrag.pipeline.trace import trace_to_dicts

__all__ = ["EfficientRAGRetriever", "result_to_prediction"]


def result_to_prediction(result: RetrievalResult, k: int | None = None) -> dspy.Prediction:
    """The kept chunks (the first ``k`` in pool order when ``k`` is set) as parallel lists:
    ``passages`` (``"{title}: {text}"``, what the Labeler read), ``ids``, ``titles``, ``scores``
    (the Labeler's Continue probability), ``hops`` and ``queries`` (where each chunk was kept, as
    ``kept_chunks`` describes), plus the question's whole ``trace`` (``Hop.to_dict()`` rows)."""
    kept = kept_chunks(result)[:k] if k is not None else kept_chunks(result)
    return dspy.Prediction(
        passages=[chunk.contents for chunk, _ in kept],
        ids=[meta["id"] for _, meta in kept],
        titles=[meta["title"] for _, meta in kept],
        scores=[meta["continue_prob"] for _, meta in kept],
        hops=[meta["hop"] for _, meta in kept],
        queries=[meta["query"] for _, meta in kept],
        trace=trace_to_dicts(result.trace),
    )


class EfficientRAGRetriever(FromPretrained, dspy.Retrieve):
    """``dspy.Retrieve`` over an ``EfficientRAG`` loop (see the module docstring).

    Args:
        rag: the retrieval loop; the retriever holds no state of its own, so one loop can serve many.
        k: at most this many passages per question (None: every chunk the loop kept). The loop's own
            per-hop depth is ``rag.config.top_k``.
        callbacks: DSPy callbacks, called as for any module.
    """

    adapter_options = ("k",)

    def __init__(
        self, rag: EfficientRAG, *, k: int | None = None, callbacks: list[Any] | None = None
    ) -> None:
        super().__init__(k=k, callbacks=callbacks)
        self.rag = rag

    def forward(self, query: str, k: int | None = None) -> dspy.Prediction:
        """The kept chunks of one question (see ``result_to_prediction``).

        Args:
            query: the question.
            k: overrides the constructor's ``k`` for this call.
        """
        return result_to_prediction(self.rag.retrieve(query), self.k if k is None else k)

    def batch(
        self, queries: Sequence[str], k: int | None = None, *, group_size: int | None = None
    ) -> list[dspy.Prediction]:
        """One Prediction per question, from one batched loop per ``group_size`` questions (all at
        once by default): the loop batches retrieval, Labeler and Filter across questions hop by hop,
        where calling the retriever per question in threads would not. Equal to calling it per question.

        Args:
            queries: the questions.
            k: as for ``forward``.
            group_size: at most this many questions per loop (bounds memory).
        """
        k = self.k if k is None else k
        out: list[dspy.Prediction] = []
        for lo, hi in groups(len(queries), group_size):
            out.extend(result_to_prediction(r, k) for r in self.rag.retrieve_batch(list(queries[lo:hi])))
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> EfficientRAGRetriever:
        """A copy that shares the loop (models and index): see the module docstring."""
        clone = copy.copy(self)
        clone.callbacks = list(self.callbacks)
        return clone
