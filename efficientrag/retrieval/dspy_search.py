"""A DSPy retriever as the loop's search backend.

DSPy has no retriever base class, and its retrievers answer in two shapes: a ``dspy.Prediction`` of
parallel lists (``dspy.retrievers.Embeddings``: ``passages`` and ``indices``, plus ``scores`` for
``EmbeddingsWithScores``; a ``dspy.Retrieve`` subclass, this package's EfficientRAG retriever
included) or a list of per-passage dicts (``dspy.ColBERTv2``: ``long_text``, ``pid``, ``score``), and
plain search functions return strings. Each passage becomes one record, a dict:

- from a Prediction, every list field with one value per passage, under its singular name:
  ``passages`` -> ``long_text``, ``indices`` -> ``index``, otherwise a final ``s`` dropped (``ids`` ->
  ``id``, ``scores`` -> ``score``, ``titles`` -> ``title``);
- from a list of dicts, the dict; from a list of strings, ``{"long_text": s}``.

Then the LangChain backend's rules apply (see ``efficientrag.retrieval.framework``): the chunk id
is the record's ``id_key`` (a record without it stops the search with a one-line error naming the
key and the keys it has), the title its ``title_key``, the score its ``score_key`` (else ``1 /
rank``), the text its ``long_text`` (or ``text``) with a leading ``"{title}: "`` removed. A retriever
that returns corpus positions (``Embeddings``' ``index``) maps them to chunk ids with ``id_map``
(the chunk ids in the order of the corpus it was built on).

``k`` goes to the call where the retriever takes it (``dspy.ColBERTv2``, ``dspy.Retrieve``
subclasses), else it is set on the retriever's ``k`` attribute (``Embeddings``), else the results are
cut at ``k``. Each query is one call; ``asearch`` runs them in worker threads, where
``Embeddings`` batches concurrent queries into one encoder call.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from efficientrag.errors import InvalidArgumentError, WrongTypeError
from efficientrag.retrieval.framework import MissingChunkIdError, _FrameworkSearch

_SINGULAR = {"passages": "long_text", "indices": "index"}
_TEXT_KEYS = ("long_text", "text")


class DSPySearch(_FrameworkSearch):
    """A DSPy retriever as a search backend (see the module docstring).

    Args:
        retriever: any DSPy retriever: ``dspy.retrievers.Embeddings``, ``dspy.ColBERTv2``, a
            ``dspy.Retrieve`` subclass, or a function ``query -> passages`` in one of their shapes.
        id_key: the record key holding the chunk id (or the corpus position, with ``id_map``).
        id_map: chunk ids indexed by the value under ``id_key`` (a sequence for positions, or a
            mapping), for retrievers that know no chunk ids.
        title_key: the record key of the title.
        score_key: the record key of the score (missing from a record: ``1 / rank``).
        max_concurrency: at most this many queries in flight in ``asearch``.

    Raises:
        ValueError: ``id_key`` is empty.
        TypeError: ``retriever`` is not callable.
        ImportError: DSPy is not installed.
    """

    framework = "DSPy"
    needs = (
        "dspy",
        "dspy",
        "a DSPy retriever (callable)",
        "pass e.g. dspy.retrievers.Embeddings(...), dspy.ColBERTv2(...) or a dspy.Retrieve",
    )

    def __init__(
        self,
        retriever: Any,
        *,
        id_key: str = "id",
        id_map: Sequence[str] | Mapping[Any, str] | None = None,
        title_key: str = "title",
        score_key: str = "score",
        max_concurrency: int = 8,
    ) -> None:
        if not id_key:
            raise InvalidArgumentError("DSPySearch needs an id_key: DSPy passages have no id of their own")
        super().__init__(retriever, id_key=id_key, title_key=title_key, score_key=score_key)
        if not callable(retriever):
            raise WrongTypeError(
                f"DSPySearch takes {self.needs[2]}, got {type(retriever).__name__}; {self.needs[3]}"
            )
        self.id_map = id_map
        self.max_concurrency = max_concurrency
        self._k_arg = _takes_k(retriever)

    @staticmethod
    def _base_retriever_class() -> type:
        import dspy  # noqa: F401  (the extra must be installed; DSPy has no retriever base class)

        return object

    def _call(self, query: str, k: int) -> list[dict[str, Any]]:
        if self._k_arg:
            out = self.retriever(query, k=k)
        else:
            if hasattr(self.retriever, "k"):
                self.retriever.k = k
            out = self.retriever(query)
        return _records(out, query)

    def _retrieve(self, queries: list[str], k: int) -> list[list[Any]]:
        return [self._call(q, k) for q in queries]

    async def _aretrieve(self, queries: list[str], k: int) -> list[list[Any]]:
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(query: str) -> list[Any]:
            async with gate:
                return await asyncio.to_thread(self._call, query, k)

        return list(await asyncio.gather(*(one(q) for q in queries)))

    def _fields(self, record: dict[str, Any]) -> tuple[Any, Any, str, Any]:
        chunk_id = record.get(self.id_key)
        if chunk_id is not None and self.id_map is not None:
            chunk_id = self._mapped(chunk_id)
        text = next((record[key] for key in _TEXT_KEYS if record.get(key) is not None), "")
        return chunk_id, record.get(self.title_key), str(text), record.get(self.score_key)

    def _mapped(self, value: Any) -> str:
        try:
            return self.id_map[value]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            raise MissingChunkIdError(
                f"DSPy result has {self.id_key} {value!r}, which id_map (of {len(self.id_map)} ids) does not "
                "hold; id_map must list the chunk ids of the corpus the retriever was built on, in its order"
            ) from None

    def _metadata(self, record: dict[str, Any]) -> dict[str, Any]:
        return record


def _takes_k(retriever: Any) -> bool:
    """Whether the retriever's call accepts ``k`` (``dspy.Retrieve`` calls ``forward``)."""
    target = getattr(retriever, "forward", None) or retriever
    try:
        return "k" in inspect.signature(target).parameters
    except (TypeError, ValueError):
        return False


def _records(out: Any, query: str) -> list[dict[str, Any]]:
    """One dict per passage, in the retriever's order (see the module docstring)."""
    if hasattr(out, "toDict"):  # dspy.Prediction / dspy.Example
        data = out.toDict()
        passages = data.get("passages")
        if not isinstance(passages, list):
            raise WrongTypeError(
                f"DSPy result for query {query[:60]!r} has no 'passages' list (its fields: {sorted(data)})"
            )
        parallel = {
            _SINGULAR.get(name, name[:-1] if name.endswith("s") else name): values
            for name, values in data.items()
            if isinstance(values, list) and len(values) == len(passages)
        }
        return [{key: values[i] for key, values in parallel.items()} for i in range(len(passages))]
    if isinstance(out, (str, Mapping)) or not isinstance(out, Sequence):
        raise WrongTypeError(
            f"DSPy result for query {query[:60]!r} is a {type(out).__name__}; expected a dspy.Prediction "
            "with passages, or a list of passages (strings or dicts)"
        )
    return [{"long_text": item} if isinstance(item, str) else dict(item) for item in out]
