"""LangChain retriever over EfficientRAG, so its multi-hop pool can feed any LangChain RAG chain.

The whole hop loop runs inside one retriever call: a chain sees one list of Documents per question,
in the order the chunks entered the pool, and the hops cost no LLM call. ``batch``/``abatch`` hand
all questions to ``EfficientRAG.retrieve_batch`` at once, because the loop batches the retriever,
Labeler and Filter across questions hop by hop; LangChain's default would run one loop per question
in a thread pool and lose that.
"""

from __future__ import annotations

from typing import Any, ClassVar

try:
    from langchain_core.callbacks import (
        AsyncCallbackManager,
        AsyncCallbackManagerForRetrieverRun,
        CallbackManager,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableConfig, get_config_list, run_in_executor
    from pydantic import ConfigDict
except ImportError as exc:
    from efficientrag.pipeline.adapters import missing_extra

    raise missing_extra("efficientrag.pipeline.langchain", "langchain-core>=0.3", "langchain", exc) from exc

from efficientrag.pipeline.adapters import FromPretrained, RetrievalLoop, groups, kept_chunks
from efficientrag.pipeline.efficientrag import RetrievalResult

__all__ = ["EfficientRAGRetriever", "result_to_documents"]


def result_to_documents(result: RetrievalResult, *, include_trace: bool = False) -> list[Document]:
    """Documents in pool order with the metadata ``kept_chunks`` describes (``id``, ``title``,
    ``continue_prob``, ``hop``, ``query``, and the trace under ``TRACE_KEY`` on request)."""
    return [
        Document(id=chunk.id, page_content=chunk.contents, metadata=metadata)
        for chunk, metadata in kept_chunks(result, include_trace=include_trace)
    ]


class EfficientRAGRetriever(FromPretrained, BaseRetriever):
    """``BaseRetriever`` over an ``EfficientRAG`` instance (or a ``RemoteEfficientRAG``); see the
    module docstring for why ``batch`` is overridden."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    rag: RetrievalLoop
    """The retrieval loop: an ``EfficientRAG``, or a ``RemoteEfficientRAG`` for a served one. The
    adapter holds no state of its own, so one loop can serve many."""
    include_trace: bool = False
    """Put the per-hop trace into every Document's metadata (under ``TRACE_KEY``)."""
    adapter_options: ClassVar[tuple[str, ...]] = ("include_trace",)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return result_to_documents(self.rag.retrieve(query), include_trace=self.include_trace)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        """A remote loop is awaited natively. The local loop is blocking index and model work with
        no async API: run it in the executor so the event loop stays free, with the sync twin of
        the run manager so callbacks nest."""
        aretrieve = getattr(self.rag, "aretrieve", None)
        if aretrieve is not None:
            return result_to_documents(await aretrieve(query), include_trace=self.include_trace)
        return await run_in_executor(
            None, self._get_relevant_documents, query, run_manager=run_manager.get_sync()
        )

    def batch(
        self,
        inputs: list[str],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[list[Document]]:
        """All questions go through ``retrieve_batch`` (in groups of ``max_concurrency`` when the
        config sets it, to bound memory), each with its own retriever run for callbacks.

        One failure fails the whole group, since the loop batches every model call: with
        ``return_exceptions`` each question of that group gets the exception.
        """
        if not inputs:
            return []
        configs = get_config_list(config, len(inputs))
        managers = [
            self._callback_manager(CallbackManager, c, **kwargs).on_retriever_start(
                None, q, name=c.get("run_name") or self.get_name(), run_id=c.get("run_id")
            )
            for q, c in zip(inputs, configs, strict=True)
        ]
        outputs: list[Any] = []
        for lo, hi in groups(len(inputs), configs[0].get("max_concurrency")):
            try:
                docs = self._documents_for(inputs[lo:hi])
            except Exception as e:
                for manager in managers[lo:hi]:
                    manager.on_retriever_error(e)
                if not return_exceptions:
                    raise
                outputs.extend([e] * (hi - lo))
                continue
            for manager, out in zip(managers[lo:hi], docs, strict=True):
                manager.on_retriever_end(out)
            outputs.extend(docs)
        return outputs

    async def abatch(
        self,
        inputs: list[str],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[list[Document]]:
        """``batch`` with async callbacks; the batched loop itself runs in the executor."""
        if not inputs:
            return []
        configs = get_config_list(config, len(inputs))
        managers = [
            await self._callback_manager(AsyncCallbackManager, c, **kwargs).on_retriever_start(
                None, q, name=c.get("run_name") or self.get_name(), run_id=c.get("run_id")
            )
            for q, c in zip(inputs, configs, strict=True)
        ]
        outputs: list[Any] = []
        for lo, hi in groups(len(inputs), configs[0].get("max_concurrency")):
            try:
                docs = await self._adocuments_for(inputs[lo:hi])
            except Exception as e:
                for manager in managers[lo:hi]:
                    await manager.on_retriever_error(e)
                if not return_exceptions:
                    raise
                outputs.extend([e] * (hi - lo))
                continue
            for manager, out in zip(managers[lo:hi], docs, strict=True):
                await manager.on_retriever_end(out)
            outputs.extend(docs)
        return outputs

    def _documents_for(self, questions: list[str]) -> list[list[Document]]:
        results = self.rag.retrieve_batch(questions)
        return [result_to_documents(r, include_trace=self.include_trace) for r in results]

    async def _adocuments_for(self, questions: list[str]) -> list[list[Document]]:
        aretrieve_batch = getattr(self.rag, "aretrieve_batch", None)
        if aretrieve_batch is None:
            return await run_in_executor(None, self._documents_for, questions)
        results = await aretrieve_batch(questions)
        return [result_to_documents(r, include_trace=self.include_trace) for r in results]

    def _callback_manager(self, manager_cls: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        """The same configuration ``invoke``/``ainvoke`` use, so a batched run traces (tags,
        metadata, LangSmith retriever name) exactly like one invoked alone."""
        return manager_cls.configure(
            config.get("callbacks"),
            None,
            verbose=kwargs.get("verbose", False),
            inheritable_tags=config.get("tags"),
            local_tags=self.tags,
            inheritable_metadata={**(config.get("metadata") or {}), **self._get_ls_params(**kwargs)},
            local_metadata=self.metadata,
        )
