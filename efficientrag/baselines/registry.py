"""Method names → method factories, for ``efficientrag eval --method <name>``.

Each family of methods keeps its table in its own module (``FACTORIES``); this module merges them.
A factory takes the experiment config, the retriever and a lazily built generator (methods that
never call an LLM don't pay for loading one).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from efficientrag.baselines.base import Method
from efficientrag.llm.generator import Generator
from efficientrag.retrieval.base import Retriever

if TYPE_CHECKING:
    from efficientrag.experiment import ExperimentConfig

GeneratorSource = Callable[[], Generator]
MethodFactory = Callable[["ExperimentConfig", Retriever, GeneratorSource], Method]

# Modules that contribute a FACTORIES dict of name -> MethodFactory.
FAMILY_MODULES = (
    "efficientrag.baselines.qa_methods",
    "efficientrag.baselines.active.factories",
    "efficientrag.treehop.method",
)


def _direct_r(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.answering import with_answer_call
    from efficientrag.baselines.direct_r import DirectRetrieval

    settings = cfg.baselines.direct_r
    top_k = max([*cfg.eval.ks, settings.top_k]) if cfg.eval.answer else max(cfg.eval.ks)
    method = DirectRetrieval(retriever, top_k=top_k)
    # "direct" is the paper's no-retrieval Direct; the two must never share an output folder.
    method.name = "direct_r"
    return with_answer_call(
        cfg, method, generator, top_k=settings.top_k, max_new_tokens=settings.max_new_tokens
    )


def _efficientrag(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.answering import with_answer_call
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.pipeline.method import EfficientRAGRetrieval

    settings = cfg.baselines.efficientrag
    method = EfficientRAGRetrieval(EfficientRAG.from_config(retriever, cfg.efficientrag))
    return with_answer_call(
        cfg, method, generator, top_k=settings.answer_top_k, max_new_tokens=settings.max_new_tokens
    )


RETRIEVAL_ONLY: dict[str, MethodFactory] = {
    "direct_r": _direct_r,
    "efficientrag": _efficientrag,
}


def canonical_method_name(name: str) -> str:
    """``Direct-R``, ``direct-r`` and ``direct_r`` name the same method."""
    return "_".join(name.strip().lower().replace("-", " ").split())


def all_factories() -> dict[str, MethodFactory]:
    table = dict(RETRIEVAL_ONLY)
    for module_name in FAMILY_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # Skip a family that is not installed (the module or its package is missing), but
            # not one whose own imports are broken.
            if exc.name is None or not (module_name + ".").startswith(exc.name + "."):
                raise
            continue
        for name, factory in module.FACTORIES.items():
            name = canonical_method_name(name)
            if name in table:
                raise RuntimeError(f"method {name!r} is registered twice ({module_name})")
            table[name] = factory
    return table


def build_method(
    name: str, cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource
) -> Method:
    table = all_factories()
    try:
        factory = table[canonical_method_name(name)]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; known methods: {', '.join(sorted(table))}") from None
    return factory(cfg, retriever, generator)
