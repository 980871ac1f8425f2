"""Every method by name: ``efficientrag eval --method <name>`` and ``baselines.<name>`` in a config.

Adding a method is one file (its class and its settings dataclass) plus one line here; its section
under ``baselines:`` follows from the line (see docs/baselines.md).
"""

from __future__ import annotations

from efficientrag.baselines.base import Method
from efficientrag.baselines.cot import CoT
from efficientrag.baselines.decompose_r import DecomposeR
from efficientrag.baselines.direct import Direct
from efficientrag.baselines.direct_r import DirectRetrieval
from efficientrag.baselines.dragin import Dragin
from efficientrag.baselines.efficientrag import EfficientRAGRetrieval
from efficientrag.baselines.fl_rag import FLRAG
from efficientrag.baselines.flare import Flare, FlareInstruct
from efficientrag.baselines.fs_rag import FSRAG
from efficientrag.baselines.iter_retgen import IterRetGen
from efficientrag.baselines.labeler_rerank import LabelerRerank
from efficientrag.baselines.rerank import Rerank
from efficientrag.baselines.self_ask import SelfAsk
from efficientrag.baselines.sr_rag import SRRAG
from efficientrag.baselines.treehop import TreeHopRetrieval
from efficientrag.baselines.wo_rag import WoRAG
from efficientrag.errors import InvalidArgumentError

METHODS: dict[str, type[Method]] = {
    # The EfficientRAG paper's baselines, and EfficientRAG itself.
    "direct": Direct,
    "cot": CoT,
    "direct_r": DirectRetrieval,
    "decompose_r": DecomposeR,
    "iter_retgen": IterRetGen,
    "self_ask": SelfAsk,
    "efficientrag": EfficientRAGRetrieval,
    # The LLM-free peer (docs/treehop.md).
    "treehop": TreeHopRetrieval,
    # Retrieve-then-rerank, the practitioner's default: a cross-encoder, or the Labeler alone.
    "rerank": Rerank,
    "labeler_rerank": LabelerRerank,
    # Active retrieval: FLARE, DRAGIN and DRAGIN's baselines.
    "wo_rag": WoRAG,
    "sr_rag": SRRAG,
    "fl_rag": FLRAG,
    "fs_rag": FSRAG,
    "flare": Flare,
    "flare_instruct": FlareInstruct,
    "dragin": Dragin,
}


def canonical_method_name(name: str) -> str:
    """``Direct-R``, ``direct-r`` and ``direct_r`` name the same method."""
    return "_".join(name.strip().lower().replace("-", " ").split())


def check_method_name(name: str) -> str:
    """The registered name of a method; an unknown one fails before any work starts."""
    key = canonical_method_name(name)
    if key not in METHODS:
        raise InvalidArgumentError(f"unknown method {name!r}; known methods: {', '.join(sorted(METHODS))}")
    return key


def registered_name(run_name: str) -> str:
    """The registry name behind a run's method name (``direct_r_qa`` -> ``direct_r``).

    Args:
        run_name: a method's name as its run folder and summary carry it (any spelling).

    Returns:
        The registered name; a name the registry does not know comes back canonical.
    """
    key = canonical_method_name(run_name)
    base = key.removesuffix("_qa")
    return base if key not in METHODS and base in METHODS and METHODS[base].retrieval_only else key
