"""Opening a ``pymilvus.MilvusClient`` for a Lite file or a server uri, with one-line errors.

pymilvus answers a missing ``milvus-lite`` package, a dead server or a Lite file held by another
process with exceptions whose text names none of the settings involved; every failure here says
which uri, and what to change or install.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from efficientrag.retrieval.errors import BackendUnavailableError
from efficientrag.retrieval.milvus_config import MilvusConfig

INSTALL_HINT = "pip install 'efficientrag[milvus]'"
LITE_FILE = "milvus.db"
SERVER_SCHEMES = ("http://", "https://", "tcp://", "grpc://", "unix:")

# pymilvus logs every failed RPC at ERROR with a traceback before raising; the errors raised here
# already say what failed, so the duplicate goes.
logging.getLogger("pymilvus").setLevel(logging.CRITICAL)


def is_server_uri(uri: str) -> bool:
    return uri.lower().startswith(SERVER_SCHEMES)


def resolve_uri(cfg: MilvusConfig, index_dir: str | Path | None) -> str:
    """``milvus.uri``, or the Lite file ``<index_dir>/milvus.db`` when it is unset."""
    if cfg.uri:
        return cfg.uri
    if index_dir is None:
        raise ValueError("retriever.kind=milvus needs retriever.milvus.uri (a .db file or http://host:19530)")
    return str(Path(index_dir) / LITE_FILE)


def describe_uri(uri: str, cfg: MilvusConfig) -> str:
    """Where a collection lives, as errors and run metadata name it."""
    db = f"/{cfg.db_name}" if cfg.db_name else ""
    return f"{uri}{db} collection {cfg.collection!r}"


def connect(cfg: MilvusConfig, uri: str, *, create: bool) -> Any:
    """A connected ``MilvusClient``. ``create``: a Lite file that does not exist yet may be made
    (indexing); otherwise a missing file is a missing index."""
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise BackendUnavailableError(f"retriever.kind=milvus needs pymilvus: {INSTALL_HINT}") from None
    if is_server_uri(uri):
        return _connect_server(MilvusClient, cfg, uri)
    return _connect_lite(MilvusClient, uri, create=create)


def _connect_server(client_cls: Any, cfg: MilvusConfig, uri: str) -> Any:
    token = cfg.token if cfg.token is not None else os.environ.get("MILVUS_TOKEN", "")
    try:
        return client_cls(uri=uri, token=token, db_name=cfg.db_name, timeout=cfg.timeout_s)
    except Exception as exc:  # noqa: BLE001 - pymilvus raises several unrelated types here
        raise BackendUnavailableError(
            f"cannot reach Milvus at {uri} ({reason(exc)}); start the server or fix retriever.milvus.uri"
        ) from None


def _connect_lite(client_cls: Any, uri: str, *, create: bool) -> Any:
    if not uri.endswith(".db"):
        raise ValueError(
            f"retriever.milvus.uri={uri!r} is neither a server (http://host:19530) nor a Milvus Lite "
            "file (a path ending in .db)"
        )
    try:
        import milvus_lite  # noqa: F401 - pymilvus serves .db files through it
    except ImportError:
        raise BackendUnavailableError(
            f"retriever.milvus.uri={uri!r} is a Milvus Lite file, which needs the milvus-lite package: "
            f"{INSTALL_HINT} (or set the uri to a Milvus server, http://host:19530)"
        ) from None
    path = Path(uri)
    if not create and not path.exists():
        from efficientrag.retrieval.errors import IndexNotFoundError

        raise IndexNotFoundError(uri, "no Milvus Lite database there")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return client_cls(uri=str(path))
    except Exception as exc:  # noqa: BLE001
        raise BackendUnavailableError(
            f"cannot open the Milvus Lite database {uri} ({reason(exc)}); Milvus Lite serves one process "
            "per file: stop the other process using it, or use a Milvus server for shared access"
        ) from None


def reason(exc: BaseException) -> str:
    """The short message of a pymilvus exception (its repr is a class name and nothing else)."""
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:300]
