"""LangChain retriever over EfficientRAG, so its multi-hop pool can feed any LangChain RAG chain.

The whole hop loop runs inside one retriever call: a chain sees one list of Documents per question,
in the order the chunks entered the pool, and the hops cost no LLM call. ``batch``/``abatch`` hand
all questions to ``EfficientRAG.retrieve_batch`` at once, because the loop batches the retriever,
Labeler and Filter across questions hop by hop; LangChain's default would run one loop per question
in a thread pool and lose that.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
    raise ImportError(
        f"efficientrag.pipeline.langchain needs langchain-core>=0.3 ({exc}); "
        "install it with: pip install 'efficientrag[langchain]'"
    ) from exc

from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG, RetrievalResult
from efficientrag.retrieval.base import Retriever

__all__ = ["TRACE_KEY", "EfficientRAGRetriever", "result_to_documents"]

TRACE_KEY = "trace"


def result_to_documents(result: RetrievalResult, *, include_trace: bool = False) -> list[Document]:
    """Documents in pool order, so results computed outside LangChain (an eval run) read the same.

    Metadata: ``id``, ``title``, ``continue_prob`` (the Labeler's Continue probability, the loop's
    only relevance score), ``hop`` (0-based; 0 is the question's own retrieval) and ``query`` (the
    query that retrieved the chunk when it was kept). A chunk is often retrieved, and rejected,
    earlier than it is kept, so the hop comes from the Labeler's Continue tag, not from the first
    retrieval. Both are None only for a result whose trace has no Continue tag for the chunk (one
    not made by the EfficientRAG loop). ``include_trace`` adds the whole per-hop trace under ``TRACE_KEY`` (the same list
    object on every Document of the question) for chains that want to show or log the reasoning.
    """
    entered = _entry_points(result.trace)
    docs = []
    for chunk, score in zip(result.chunks, result.scores, strict=True):
        hop, query = entered.get(chunk.id, (None, None))
        metadata: dict[str, Any] = {
            "id": chunk.id,
            "title": chunk.title,
            "continue_prob": score,
            "hop": hop,
            "query": query,
        }
        if include_trace:
            metadata[TRACE_KEY] = result.trace
        docs.append(Document(id=chunk.id, page_content=chunk.contents, metadata=metadata))
    return docs


def _entry_points(trace: Sequence[dict[str, Any]]) -> dict[str, tuple[int, str]]:
    """First (hop, query) at which each chunk was tagged Continue, i.e. entered the pool.

    Rows marked ``seen`` carry no tag (the chunk was already pooled or already judged for that
    query), and the pool only grows, so the first Continue is the entry. A chunk tagged Continue
    after the chunk budget filled never entered the pool, but then it is not in ``result.chunks``
    either, so the extra entry is never read.
    """
    entered: dict[str, tuple[int, str]] = {}
    for step in trace:
        for query, rows in zip(step["queries"], step["hits"], strict=True):
            for row in rows:
                if row.get("tag") == "continue" and row["id"] not in entered:
                    entered[row["id"]] = (int(step["hop"]), query)
    return entered


class EfficientRAGRetriever(BaseRetriever):
    """``BaseRetriever`` over an ``EfficientRAG`` instance; see the module docstring for why
    ``batch`` is overridden."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    rag: EfficientRAG
    """The retrieval loop; the adapter holds no state of its own, so one loop can serve many."""
    include_trace: bool = False
    """Put the per-hop trace into every Document's metadata (under ``TRACE_KEY``)."""

    @classmethod
    def from_pretrained(
        cls,
        retriever: Retriever,
        labeler_dir: str | Path,
        filter_dir: str | Path,
        *,
        include_trace: bool = False,
        **config_overrides: Any,
    ) -> EfficientRAGRetriever:
        """Build from the folders ``efficientrag train labeler|filter`` wrote (their ``best/``).

        ``config_overrides`` are ``EfficientRAGConfig`` fields (``top_k``, ``max_hops``, ``device``,
        ...), so callers do not have to assemble a config to change one setting.
        """
        config = EfficientRAGConfig(labeler=str(labeler_dir), filter=str(filter_dir), **config_overrides)
        return cls(rag=EfficientRAG.from_config(retriever, config), include_trace=include_trace)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return result_to_documents(self.rag.retrieve(query), include_trace=self.include_trace)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        """The loop is blocking index and model work with no async API: run it in the executor so
        the event loop stays free, with the sync twin of the run manager so callbacks nest."""
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
        for lo, hi in _groups(len(inputs), configs[0].get("max_concurrency")):
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
        for lo, hi in _groups(len(inputs), configs[0].get("max_concurrency")):
            try:
                docs = await run_in_executor(None, self._documents_for, inputs[lo:hi])
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


def _groups(n: int, size: int | None) -> list[tuple[int, int]]:
    step = n if not size or size <= 0 else size
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]
