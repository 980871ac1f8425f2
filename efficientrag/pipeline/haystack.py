"""EfficientRAG as a Haystack retriever component, so its multi-hop pool can feed any Haystack pipeline.

The whole hop loop runs inside one ``run``: the pipeline sees one list of Documents per question, in
the order the chunks entered the pool, and the hops cost no LLM call. The second output, ``trace``,
is the per-hop trace (queries, hits, tags, labeled words) for callers that show or log it.

Haystack pipelines are saved as YAML through each component's ``to_dict``, and a component loads
its heavy parts in ``warm_up``. So the component is built from paths and settings (the Labeler and
Filter folders, the index folder, the corpus file, the retriever and loop settings) and loads the
models and the index on ``warm_up``; its ``to_dict`` holds those paths and settings and never a
weight. An ``EfficientRAG`` built in Python can be wrapped too (``rag=``), but that component
cannot be saved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    from haystack import Document, component, default_from_dict, default_to_dict
except ImportError as exc:
    from efficientrag.pipeline.adapters import missing_extra

    raise missing_extra("efficientrag.pipeline.haystack", "haystack-ai>=3.1", "haystack", exc) from exc

from efficientrag.config_values import from_dict as config_from_dict
from efficientrag.config_values import same_named
from efficientrag.errors import InvalidArgumentError, MissingFileError
from efficientrag.pipeline.adapters import groups, kept_chunks, load_rag
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.efficientrag import EfficientRAG, RetrievalResult
from efficientrag.pipeline.trace import trace_to_dicts
from efficientrag.retrieval.config import RetrieverConfig

__all__ = ["EfficientRAGRetriever", "result_to_documents"]

# The constructor arguments a saved pipeline keeps (paths and settings, never weights).
SAVED = ("labeler", "filter", "index_dir", "corpus", "retriever", "settings")


def result_to_documents(result: RetrievalResult) -> list[Document]:
    """Documents in pool order, scored with the Labeler's Continue probability, with the metadata
    ``kept_chunks`` describes (``id``, ``title``, ``continue_prob``, ``hop``, ``query``)."""
    return [
        Document(id=chunk.id, content=chunk.contents, meta=meta, score=meta["continue_prob"])
        for chunk, meta in kept_chunks(result)
    ]


@component
class EfficientRAGRetriever:
    """Haystack component over the EfficientRAG loop: ``run(query)`` returns ``documents`` and
    ``trace`` (see the module docstring for why it is built from paths).

    Args:
        labeler: the trained Labeler folder (the ``best/`` that ``efficientrag train labeler`` wrote).
        filter: the trained Filter folder.
        index_dir: the package's index folder: loaded if an index is there, else built there from
            ``corpus`` on ``warm_up``.
        corpus: the corpus JSONL the index covers (``{"id","title","text"}`` lines); not needed for a
            Milvus collection, whose hits carry their chunks.
        retriever: ``RetrieverConfig`` fields (``kind``, ``encoder``, ...), checked here.
        settings: ``EfficientRAGConfig`` fields (``top_k``, ``max_hops``, ``device``, ...), checked here.
        rag: an ``EfficientRAG`` built in Python, instead of all the above (such a component cannot
            be serialized).
    """

    def __init__(
        self,
        *,
        labeler: str | Path | None = None,
        filter: str | Path | None = None,  # noqa: A002 (the loop's own name for the model)
        index_dir: str | Path | None = None,
        corpus: str | Path | None = None,
        retriever: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        rag: EfficientRAG | None = None,
    ) -> None:
        paths = {"labeler": labeler, "filter": filter, "index_dir": index_dir, "corpus": corpus}
        self._rag = rag
        if rag is not None:
            given = [k for k, v in {**paths, "retriever": retriever, "settings": settings}.items() if v]
            if given:
                raise InvalidArgumentError(
                    f"EfficientRAGRetriever: pass rag= or folders and settings, not both ({given})"
                )
            self.labeler = self.filter = self.index_dir = self.corpus = None
            self.retriever, self.settings = {}, {}
            return
        _check_paths(paths)
        self.labeler, self.filter = str(labeler), str(filter)
        self.index_dir, self.corpus = str(index_dir), None if corpus is None else str(corpus)
        self.retriever, self.settings = dict(retriever or {}), dict(settings or {})
        # Bad keys or values fail now, naming the key, not at warm_up in the middle of a pipeline.
        self._retriever_config = config_from_dict(
            RetrieverConfig, self.retriever, origin="EfficientRAGRetriever", prefix="retriever."
        )
        config_from_dict(
            EfficientRAGConfig, self.settings, origin="EfficientRAGRetriever", prefix="settings."
        )

    @property
    def rag(self) -> EfficientRAG:
        """The loop (loaded by ``warm_up`` when the component was built from folders)."""
        self.warm_up()
        assert self._rag is not None
        return self._rag

    def warm_up(self) -> None:
        """Load the index (building it from the corpus if the folder has none) and both models, once."""
        if self._rag is not None:
            return
        from efficientrag.data.corpus import Corpus
        from efficientrag.retrieval.factory import build_retriever, load_retriever

        cfg = self._retriever_config
        if self.corpus is None:
            index = load_retriever(cfg, None, self.index_dir)
        else:
            index = build_retriever(cfg, Corpus.load(self.corpus), self.index_dir)
        self._rag = load_rag(index, self.labeler, self.filter, **self.settings)

    @component.output_types(documents=list[Document], trace=list[dict[str, Any]])
    def run(self, query: str) -> dict[str, Any]:
        """The kept chunks of one question, and its per-hop trace (``Hop.to_dict()`` rows).

        Args:
            query: the question.
        """
        result = self.rag.retrieve(query)
        return {"documents": result_to_documents(result), "trace": trace_to_dicts(result.trace)}

    def run_batch(self, queries: Sequence[str], *, group_size: int | None = None) -> dict[str, Any]:
        """``run`` for many questions through one batched loop per ``group_size`` of them (all at once
        by default), since the loop batches retrieval, Labeler and Filter across questions hop by hop;
        equal to calling ``run`` per question. Not a pipeline input: call it on the component.

        Args:
            queries: the questions.
            group_size: at most this many questions per loop (bounds memory).
        """
        documents: list[list[Document]] = []
        traces: list[list[dict[str, Any]]] = []
        for lo, hi in groups(len(queries), group_size):
            for result in self.rag.retrieve_batch(list(queries[lo:hi])):
                documents.append(result_to_documents(result))
                traces.append(trace_to_dicts(result.trace))
        return {"documents": documents, "trace": traces}

    def to_dict(self) -> dict[str, Any]:
        """Paths and settings only: the YAML of a saved pipeline never holds a weight."""
        if self.labeler is None:
            raise InvalidArgumentError(
                "EfficientRAGRetriever built with rag= cannot be serialized; build it from "
                "labeler=, filter=, index_dir= (and corpus=) to save the pipeline"
            )
        return default_to_dict(self, **same_named(self, SAVED))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EfficientRAGRetriever:
        return default_from_dict(cls, data)


def _check_paths(paths: Mapping[str, str | Path | None]) -> None:
    """Folders and files that must exist are checked at construction, naming the argument."""
    for name in ("labeler", "filter", "index_dir"):
        if paths[name] is None:
            raise InvalidArgumentError(
                f"EfficientRAGRetriever needs {name}= (or rag=, an EfficientRAG built in Python)"
            )
    for name in ("labeler", "filter"):
        if not Path(paths[name]).is_dir():
            raise MissingFileError(f"EfficientRAGRetriever: {name} folder {paths[name]} does not exist")
    corpus = paths["corpus"]
    if corpus is not None and not Path(corpus).is_file():
        raise MissingFileError(f"EfficientRAGRetriever: corpus file {corpus} does not exist")
