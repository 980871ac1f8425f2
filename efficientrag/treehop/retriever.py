"""TreeHop as a multi-hop retriever over a dense index: no text is re-encoded after the question.

Per batch of questions: encode the questions once (the only encoder call), then per hop one FAISS
search and one network call for every open query of every question (:mod:`.search`). The result
holds the chunks, the hop each was found at, every hop's trace, and the cost split into encode,
search and model seconds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from efficientrag.data.schema import Chunk
from efficientrag.errors import ConfigError, InvalidArgumentError
from efficientrag.pipeline.efficientrag import RetrievalResult
from efficientrag.treehop.config import TreeHopRetrievalConfig
from efficientrag.treehop.model import TreeHop
from efficientrag.treehop.search import Expansion, SearchSettings, expand_trees
from efficientrag.treehop.trace import TreeHopHit, TreeHopLayer
from efficientrag.treehop.vectors import IndexVectors, check_compatible


@dataclass
class TreeHopResult(RetrievalResult):
    """EfficientRAG's result (question, chunks, scores, trace, counters) with TreeHop's layers as the
    trace, and ``hops``: the hop (1-based) at which each chunk joined the result.

    Attributes:
        trace: One :class:`TreeHopLayer` per hop: its queries, hits and the chunks it kept.
        hops: Per chunk, the 1-based hop at which it joined the result.
    """

    trace: list[TreeHopLayer]  # type: ignore[assignment]
    hops: list[int] = field(default_factory=list)

    def up_to(self, hop: int) -> list[Chunk]:
        """The result a run with ``hop`` hops would have returned: the layers are pruned one by one,
        so stopping earlier only drops the later layers.

        Args:
            hop: The number of hops (1-based).

        Returns:
            The chunks found up to that hop, in result order.
        """
        return [c for c, h in zip(self.chunks, self.hops, strict=True) if h <= hop]


class TreeHopRetriever:
    """``retrieve_batch(questions)``; ``retriever`` must be a dense retriever (encoder + FAISS).

    Args:
        retriever: A dense retriever (its encoder embeds the questions, its FAISS index is searched).
        model: The trained update network; it must have been trained over the same encoder.
        config: Top-k per layer, hops, pruning (None: the defaults).

    Raises:
        ConfigError: ``retriever`` is not dense, or the model was trained over another encoder
            (name, width or normalization) than the index's.
    """

    def __init__(self, retriever: Any, model: TreeHop, config: TreeHopRetrievalConfig | None = None) -> None:
        self.vectors = IndexVectors(retriever)
        check_compatible(model.config, self.vectors, where=str(model.source or "TreeHop model"))
        self.retriever = retriever
        self.model = model
        self.config = config or TreeHopRetrievalConfig()

    @classmethod
    def from_config(cls, retriever: Any, config: TreeHopRetrievalConfig) -> TreeHopRetriever:
        """Load the model the config names and search with it.

        Args:
            retriever: A dense retriever.
            config: The ``treehop:`` settings; ``model`` names the trained folder.

        Returns:
            The retriever.

        Raises:
            ConfigError: The config names no model.
        """
        if not config.model:
            raise ConfigError(
                "TreeHop needs a trained model: set treehop.model to the folder written by "
                "`accelerate launch train/treehop.py` (its best/ subfolder)"
            )
        return cls(retriever, TreeHop.from_pretrained(config.model, device=config.device), config)

    @property
    def settings(self) -> SearchSettings:
        """The tree search's settings, from the config."""
        c = self.config
        return SearchSettings(top_k=c.top_k, hops=c.hops, rule=c.pruning, redundancy=c.redundancy)

    def retrieve(self, question: str) -> TreeHopResult:
        """Retrieve for one question (a batch of one).

        Args:
            question: The question.

        Returns:
            Its chunks, the hop each joined at, and the per-layer trace.
        """
        return self.retrieve_batch([question])[0]

    def retrieve_batch(
        self, questions: Sequence[str], *, question_vectors: np.ndarray | None = None
    ) -> list[TreeHopResult]:
        """``question_vectors``: the questions already encoded (validation during training encodes
        them once for every epoch); their encode time then counts as zero.

        Args:
            questions: The questions.
            question_vectors: Their embeddings, ``(len(questions), dim)`` (None: encode them).

        Returns:
            One result per question, in order (``[]`` for no questions).

        Raises:
            ValueError: ``question_vectors`` has the wrong shape.
        """
        questions = list(questions)
        if not questions:
            return []
        t0 = time.perf_counter()
        if question_vectors is None:
            q_vecs = self.vectors.encode_questions(questions)
        else:
            q_vecs = np.asarray(question_vectors, dtype=np.float32)
            if q_vecs.shape != (len(questions), self.vectors.dim):
                raise InvalidArgumentError(
                    f"question_vectors has shape {q_vecs.shape}, expected {(len(questions), self.vectors.dim)}"
                )
        t_encode = (time.perf_counter() - t0) / len(questions)
        trees = expand_trees(q_vecs, self.vectors, self.model.update, self.settings)
        return [self._result(q, tree, t_encode) for q, tree in zip(questions, trees, strict=True)]

    def _result(self, question: str, tree: Expansion, t_encode: float) -> TreeHopResult:
        chunks = self.vectors.corpus.chunks
        trace = []
        seconds = {"encode": t_encode, "search": 0.0, "model": 0.0}
        for n, layer in enumerate(tree.layers):
            width = layer.rows.shape[1] if layer.rows.ndim == 2 else 0
            flat_rows = layer.rows.ravel()
            hits: list[list[TreeHopHit]] = []
            for j in range(len(layer.query_paths)):
                row_hits = []
                for i in range(j * width, (j + 1) * width):
                    if flat_rows[i] < 0:
                        continue
                    row_hits.append(
                        TreeHopHit(
                            id=chunks[int(flat_rows[i])].id,
                            score=float(layer.scores.ravel()[i]),
                            kept=bool(layer.decision.output[i]),
                            expanded=bool(layer.decision.expand[i]),
                            pruned=layer.decision.reason[i],
                        )
                    )
                hits.append(row_hits)
            timings = dict(layer.seconds)
            if n == 0:
                timings["encode"] = t_encode
            for key, value in layer.seconds.items():
                seconds[key] = seconds.get(key, 0.0) + value
            trace.append(
                TreeHopLayer(
                    hop=layer.hop - 1,
                    queries=[[chunks[r].id for r in path] for path in layer.query_paths],
                    hits=hits,
                    kept=[chunks[r].id for r, h in zip(tree.rows, tree.hops, strict=True) if h == layer.hop],
                    timings_s=timings,
                )
            )
        counters = {
            "hops": float(len(tree.layers)),
            "llm_calls": 0.0,
            "retrieval_calls": float(sum(len(layer.query_paths) for layer in tree.layers)),
            "model_updates": float(sum(int(layer.decision.expand.sum()) for layer in tree.layers[:-1])),
            **{f"time_{k}_s": v for k, v in seconds.items()},
        }
        return TreeHopResult(
            question=question,
            chunks=[chunks[r] for r in tree.rows],
            scores=list(tree.scores),
            hops=list(tree.hops),
            trace=trace,
            counters=counters,
        )
