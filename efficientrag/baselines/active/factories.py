"""Registry table of the active RAG methods (merged by :mod:`efficientrag.baselines.registry`).

Settings come from ``cfg.active.<method>``; the exemplar set follows ``cfg.data.dataset`` unless a
preset names one. The generator is built when the method is (its capabilities are checked then:
FLARE needs token probabilities, DRAGIN a local model's entropies and attention). Like every
answering method, each is judged for Acc when ``baselines.judge.enabled``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.baselines.base import Method
from efficientrag.baselines.registry import GeneratorSource
from efficientrag.retrieval.base import Retriever

if TYPE_CHECKING:
    from efficientrag.experiment import ExperimentConfig


def _dataset(cfg: ExperimentConfig) -> str:
    from efficientrag.data.readers.registry import canonical_dataset_name

    try:
        return canonical_dataset_name(cfg.data.dataset)
    except ValueError:
        return ""


def _judged(cfg: ExperimentConfig, method: Method) -> Method:
    from efficientrag.eval.judge import maybe_judged

    return maybe_judged(cfg, method)


def _wo_rag(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.wo_rag import WoRAG

    return _judged(cfg, WoRAG(retriever, generator(), cfg.active.wo_rag, dataset=_dataset(cfg)))


def _sr_rag(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.sr_rag import SRRAG

    return _judged(cfg, SRRAG(retriever, generator(), cfg.active.sr_rag, dataset=_dataset(cfg)))


def _fl_rag(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.fl_rag import FLRAG

    return _judged(cfg, FLRAG(retriever, generator(), cfg.active.fl_rag, dataset=_dataset(cfg)))


def _fs_rag(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.fs_rag import FSRAG

    return _judged(cfg, FSRAG(retriever, generator(), cfg.active.fs_rag, dataset=_dataset(cfg)))


def _flare(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.flare import Flare

    return _judged(cfg, Flare(retriever, generator(), cfg.active.flare, dataset=_dataset(cfg)))


def _flare_instruct(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.flare import FlareInstruct

    return _judged(
        cfg, FlareInstruct(retriever, generator(), cfg.active.flare_instruct, dataset=_dataset(cfg))
    )


def _dragin(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.dragin import Dragin

    return _judged(cfg, Dragin(retriever, generator(), cfg.active.dragin, dataset=_dataset(cfg)))


FACTORIES = {
    "wo_rag": _wo_rag,
    "sr_rag": _sr_rag,
    "fl_rag": _fl_rag,
    "fs_rag": _fs_rag,
    "flare": _flare,
    "flare_instruct": _flare_instruct,
    "dragin": _dragin,
}
