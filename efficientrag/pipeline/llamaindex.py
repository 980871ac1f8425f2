"""LlamaIndex retriever over EfficientRAG, so its multi-hop pool can feed any LlamaIndex query engine.

The whole hop loop runs inside one ``retrieve`` call: a query engine sees one list of nodes per
question, in the order the chunks entered the pool, and the hops cost no LLM call. LlamaIndex has no
batch API on retrievers, so ``retrieve_batch``/``aretrieve_batch`` add one: they hand all questions
to ``EfficientRAG.retrieve_batch`` at once, because the loop batches the retriever, Labeler and
Filter across questions hop by hop, and still report one retrieval per question to callbacks and
instrumentation.

A node's metadata (hop, score, query, trace) is for the caller, not for the answering LLM: it is
excluded from the text LlamaIndex builds for LLMs and embedders, so the LLM reads the same
``"{title}: {text}"`` the Labeler read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

try:
    import llama_index.core.instrumentation as instrument
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload
    from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
    from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType, TextNode
except ImportError as exc:
    from efficientrag.pipeline.adapters import missing_extra

    raise missing_extra(
        "efficientrag.pipeline.llamaindex", "llama-index-core>=0.12", "llamaindex", exc
    ) from exc

from efficientrag.errors import WrongTypeError
from efficientrag.pipeline.adapters import (
    METADATA_KEYS,
    FromPretrained,
    RetrievalLoop,
    groups,
    kept_chunks,
)
from efficientrag.pipeline.efficientrag import RetrievalResult

__all__ = ["EfficientRAGRetriever", "result_to_nodes"]

dispatcher = instrument.get_dispatcher(__name__)


def result_to_nodes(result: RetrievalResult, *, include_trace: bool = False) -> list[NodeWithScore]:
    """Nodes in pool order, scored with the Labeler's Continue probability, with the metadata
    ``kept_chunks`` describes (``id``, ``title``, ``continue_prob``, ``hop``, ``query``, and the
    trace under ``TRACE_KEY`` on request), none of which reaches an LLM or embedding prompt."""
    hidden = list(METADATA_KEYS)
    return [
        NodeWithScore(
            node=TextNode(
                id_=chunk.id,
                text=chunk.contents,
                metadata=metadata,
                excluded_llm_metadata_keys=hidden,
                excluded_embed_metadata_keys=hidden,
            ),
            score=metadata["continue_prob"],
        )
        for chunk, metadata in kept_chunks(result, include_trace=include_trace)
    ]


class EfficientRAGRetriever(FromPretrained, BaseRetriever):
    """LlamaIndex ``BaseRetriever`` over an ``EfficientRAG`` instance (or a ``RemoteEfficientRAG``);
    see the module docstring for why ``retrieve_batch`` exists."""

    adapter_options = ("include_trace", "callback_manager")

    def __init__(
        self,
        rag: RetrievalLoop,
        *,
        include_trace: bool = False,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        """``rag`` is the retrieval loop, local or a ``RemoteEfficientRAG`` (the adapter holds no
        state of its own, so one loop can serve many); ``include_trace`` puts the per-hop trace into
        every node's metadata."""
        if not isinstance(rag, RetrievalLoop):
            raise WrongTypeError(
                f"rag must have retrieve() and retrieve_batch() (an EfficientRAG), got {type(rag).__name__}"
            )
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.rag = rag
        self.include_trace = include_trace

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return result_to_nodes(self.rag.retrieve(query_bundle.query_str), include_trace=self.include_trace)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """A remote loop is awaited natively. The local loop is blocking index and model work with
        no async API: run it in a worker thread so the event loop stays free."""
        aretrieve = getattr(self.rag, "aretrieve", None)
        if aretrieve is not None:
            return result_to_nodes(await aretrieve(query_bundle.query_str), include_trace=self.include_trace)
        return await asyncio.to_thread(self._retrieve, query_bundle)

    @dispatcher.span
    def retrieve_batch(
        self, queries: Sequence[QueryType], *, group_size: int | None = None
    ) -> list[list[NodeWithScore]]:
        """One node list per query, from one batched loop per ``group_size`` queries (all at once
        by default; a size bounds memory). Equal to ``[retrieve(q) for q in queries]``.

        Each query gets its own retrieval start/end in callbacks and instrumentation. The loop
        batches every model call, so one failure fails the whole group: the exception is raised
        after the group's queries have been reported as failed.
        """
        bundles = [QueryBundle(q) if isinstance(q, str) else q for q in queries]
        if not bundles:
            return []
        self._check_callback_manager()
        outputs: list[list[NodeWithScore]] = []
        with self.callback_manager.as_trace("query"):
            for lo, hi in groups(len(bundles), group_size):
                group = bundles[lo:hi]
                event_ids = self._start(group)
                try:
                    nodes = self._nodes_for(group)
                except Exception as exc:
                    self._fail(event_ids, exc)
                    raise
                self._end(group, event_ids, nodes)
                outputs.extend(nodes)
        return outputs

    @dispatcher.span
    async def aretrieve_batch(
        self, queries: Sequence[QueryType], *, group_size: int | None = None
    ) -> list[list[NodeWithScore]]:
        """``retrieve_batch`` with the batched loop in a worker thread."""
        return await asyncio.to_thread(self.retrieve_batch, queries, group_size=group_size)

    def _nodes_for(self, bundles: list[QueryBundle]) -> list[list[NodeWithScore]]:
        results = self.rag.retrieve_batch([b.query_str for b in bundles])
        return [result_to_nodes(r, include_trace=self.include_trace) for r in results]

    def _start(self, bundles: list[QueryBundle]) -> list[str]:
        """The events ``retrieve`` emits before it retrieves, once per query."""
        event_ids = []
        for bundle in bundles:
            dispatcher.event(RetrievalStartEvent(str_or_query_bundle=bundle))
            event_ids.append(
                self.callback_manager.on_event_start(
                    CBEventType.RETRIEVE, payload={EventPayload.QUERY_STR: bundle.query_str}
                )
            )
        return event_ids

    def _end(
        self, bundles: list[QueryBundle], event_ids: list[str], nodes: list[list[NodeWithScore]]
    ) -> None:
        for bundle, event_id, out in zip(bundles, event_ids, nodes, strict=True):
            self.callback_manager.on_event_end(
                CBEventType.RETRIEVE, payload={EventPayload.NODES: out}, event_id=event_id
            )
            dispatcher.event(RetrievalEndEvent(str_or_query_bundle=bundle, nodes=out))

    def _fail(self, event_ids: list[str], exc: Exception) -> None:
        """Close every open retrieval with the exception, as ``CallbackManager.event`` does."""
        for event_id in event_ids:
            self.callback_manager.on_event_end(
                CBEventType.RETRIEVE, payload={EventPayload.EXCEPTION: exc}, event_id=event_id
            )
