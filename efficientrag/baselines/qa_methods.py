"""Registry table of the EfficientRAG paper's answering baselines (merged by
:mod:`efficientrag.baselines.registry`): Direct, CoT, Decompose-R, Iter-RetGen, Self-Ask.

Direct-R and EfficientRAG answer through :func:`efficientrag.baselines.answering.with_answer_call`
(``eval.answer=true``) from their entries in the registry itself. Every method here is judged
for Acc when ``baselines.judge.enabled``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efficientrag.baselines.base import Method
from efficientrag.baselines.prompts import PromptLibrary
from efficientrag.baselines.qa_base import GeneratorSource
from efficientrag.retrieval.base import Retriever

if TYPE_CHECKING:
    from efficientrag.experiment import ExperimentConfig


def _common(cfg: ExperimentConfig) -> dict:
    b = cfg.baselines
    return {"prompts": PromptLibrary(b.prompts), "chat": b.prompts.chat, "temperature": b.temperature}


def _judged(cfg: ExperimentConfig, method: Method) -> Method:
    from efficientrag.eval.judge import maybe_judged

    return maybe_judged(cfg, method)


def _direct(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.direct import Direct

    return _judged(cfg, Direct(generator, max_new_tokens=cfg.baselines.direct.max_new_tokens, **_common(cfg)))


def _cot(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.cot import CoT

    return _judged(cfg, CoT(generator, max_new_tokens=cfg.baselines.cot.max_new_tokens, **_common(cfg)))


def _decompose_r(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.decompose_r import DecomposeR

    s = cfg.baselines.decompose_r
    method = DecomposeR(
        retriever,
        generator,
        top_k=s.top_k,
        max_sub_questions=s.max_sub_questions,
        answer_top_k=s.answer_top_k,
        decompose_max_new_tokens=s.decompose_max_new_tokens,
        max_new_tokens=s.max_new_tokens,
        **_common(cfg),
    )
    return _judged(cfg, method)


def _iter_retgen(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.iter_retgen import IterRetGen

    s = cfg.baselines.iter_retgen
    method = IterRetGen(
        retriever,
        generator,
        iterations=s.iterations,
        top_k=s.top_k,
        query_source=s.query_source,
        max_new_tokens=s.max_new_tokens,
        **_common(cfg),
    )
    return _judged(cfg, method)


def _self_ask(cfg: ExperimentConfig, retriever: Retriever, generator: GeneratorSource) -> Method:
    from efficientrag.baselines.self_ask import SelfAsk

    s = cfg.baselines.self_ask
    method = SelfAsk(
        retriever,
        generator,
        max_follow_ups=s.max_follow_ups,
        top_k=s.top_k,
        step_max_new_tokens=s.step_max_new_tokens,
        answer_max_new_tokens=s.answer_max_new_tokens,
        final_max_new_tokens=s.final_max_new_tokens,
        **_common(cfg),
    )
    return _judged(cfg, method)


FACTORIES = {
    "direct": _direct,
    "cot": _cot,
    "decompose_r": _decompose_r,
    "iter_retgen": _iter_retgen,
    "self_ask": _self_ask,
}
