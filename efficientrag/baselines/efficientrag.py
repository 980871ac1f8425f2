"""EfficientRAG as an evaluation method: the chunks its loop kept (scored as one set, with their
count), and one answer call over them when the run asks for answers.

Its settings are the loop's own section, ``efficientrag:`` (``answer_top_k`` and
``answer_max_new_tokens`` configure the answer call), so it is configured in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from efficientrag.baselines.answering import answer_if_asked
from efficientrag.baselines.base import Counters, GeneratorSource, Method, Prediction, SharedSettings
from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.llm.generator import Generator
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.trace import trace_to_dicts
from efficientrag.retrieval.base import Retriever

if TYPE_CHECKING:
    # The loop imports torch and spaCy: a config that registers this method must load without them.
    from efficientrag.pipeline.efficientrag import EfficientRAG


class EfficientRAGRetrieval(Method):
    name = "efficientrag"
    config_class = EfficientRAGConfig
    config_key = "efficientrag"
    cfg: EfficientRAGConfig
    retrieval_only = True
    model_fields: ClassVar[dict[str, str]] = {
        "labeler": "labeler",
        "filter": "filter",
        "first_hop_reranker": "reranker",
    }
    optional_model_fields: ClassVar[frozenset[str]] = frozenset({"first_hop_reranker"})

    @classmethod
    def settings(cls, cfg: Any) -> EfficientRAGConfig:
        """The experiment config's own ``efficientrag:`` section (not one under ``baselines:``)."""
        return cfg.efficientrag

    def __init__(
        self,
        retriever: Retriever | None,
        generator: GeneratorSource | Generator | None,
        cfg: EfficientRAGConfig | None = None,
        *,
        shared: SharedSettings | None = None,
        rag: EfficientRAG | None = None,
    ) -> None:
        """``rag``: an EfficientRAG already built (its models loaded; ``cfg`` defaults to its
        config); otherwise one is built from ``cfg`` (``labeler`` and ``filter`` name the model
        folders)."""
        super().__init__(
            retriever, generator, cfg if cfg is not None or rag is None else rag.config, shared=shared
        )
        if rag is None:
            if retriever is None:
                raise InvalidArgumentError(
                    "EfficientRAGRetrieval needs a retriever or a built EfficientRAG (rag=)"
                )
            from efficientrag.pipeline.efficientrag import EfficientRAG

            rag = EfficientRAG.from_config(retriever, self.cfg)
        self.rag = rag

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        results = self.rag.retrieve_batch([ex.question for ex in examples])
        out = []
        for ex, res in zip(examples, results, strict=True):
            counters = Counters(res.counters)
            for hop in res.trace:
                for stage, seconds in hop.timings_s.items():
                    counters.add(f"time_{stage}_s", seconds)
            out.append(
                Prediction(
                    example_id=ex.id,
                    chunks=res.chunks,
                    scores=res.scores,
                    ranked=False,
                    trace={"hops": trace_to_dicts(res.trace)},
                    counters=counters,
                )
            )
        return answer_if_asked(
            self, examples, out, top_k=self.cfg.answer_top_k, max_new_tokens=self.cfg.answer_max_new_tokens
        )
