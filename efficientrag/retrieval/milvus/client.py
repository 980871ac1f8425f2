"""Opening a ``pymilvus.MilvusClient`` for a Lite file or a server uri, with one-line errors.

pymilvus answers a missing ``milvus-lite`` package, a dead server, a Lite file held by another
process or a Lite path that cannot be written with exceptions whose text names none of the
settings involved (and Milvus Lite's own cause only in a logged traceback); every failure here
says which uri, the real cause, and what to change or install. A server older than 2.5 is
refused up front when the settings need its missing full-text search (version.py).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from efficientrag.errors import InvalidArgumentError
from efficientrag.retrieval.errors import BackendUnavailableError
from efficientrag.retrieval.milvus.config import MilvusConfig
from efficientrag.retrieval.milvus.version import check_full_text, server_version

INSTALL_HINT = "pip install 'efficientrag[milvus]'"
LITE_FILE = "milvus.db"
SERVER_SCHEMES = ("http://", "https://", "tcp://", "grpc://", "unix:")

# pymilvus logs every failed RPC at ERROR with a traceback before raising; the errors raised here
# already say what failed, so the duplicate goes.
logging.getLogger("pymilvus").setLevel(logging.CRITICAL)


class _UnimplementedRpcFilter(logging.Filter):
    """Drops gRPC's report of an RPC that Milvus Lite does not implement.

    Milvus Lite 3 serves pymilvus through an in-process gRPC server whose servicer leaves some
    RPCs unimplemented (``AllocTimestamp``, which pymilvus calls while waiting for an index and
    whose failure it ignores). gRPC logs each at ERROR with a traceback, so every successful
    command printed one. Only ``NotImplementedError("Method not implemented!")`` goes; any other
    exception in the server is still logged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, NotImplementedError) and "Method not implemented" in str(exc))


logging.getLogger("grpc._server").addFilter(_UnimplementedRpcFilter())


def is_server_uri(uri: str) -> bool:
    return uri.lower().startswith(SERVER_SCHEMES)


def resolve_uri(cfg: MilvusConfig, index_dir: str | Path | None) -> str:
    """``milvus.uri``, or the Lite file ``<index_dir>/milvus.db`` when it is unset."""
    if cfg.uri:
        return cfg.uri
    if index_dir is None:
        raise InvalidArgumentError(
            "retriever.kind=milvus needs retriever.milvus.uri (a .db file or http://host:19530)"
        )
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
        client = _connect_server(MilvusClient, cfg, uri)
    else:
        client = _connect_lite(MilvusClient, uri, create=create)
    try:
        check_full_text(cfg, uri, server_version(client, cfg.timeout_s))
    except BackendUnavailableError:
        client.close()
        raise
    return client


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
        raise InvalidArgumentError(
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
    _check_lite_path(path, uri)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BackendUnavailableError(
            f"cannot create the folder of the Milvus Lite database {uri} ({_os_reason(exc)})"
        ) from None
    with _lite_start_failure() as cause:
        try:
            return client_cls(uri=str(path))
        except Exception as exc:  # noqa: BLE001
            failure = exc
    raise BackendUnavailableError(_lite_open_message(uri, failure, cause)) from None


def _check_lite_path(path: Path, uri: str) -> None:
    """Before Milvus Lite tries: the ``.db`` folder (or the folder it will be made in) must be a
    folder, and one this process can write (Lite writes a lock file even to search)."""
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        if existing == path:
            what = "it is a file (milvus-lite 3 keeps a database in a folder of that name)"
        else:
            what = f"{existing} is a file, not a folder"
        raise BackendUnavailableError(
            f"cannot open the Milvus Lite database {uri}: {what}; set retriever.milvus.uri (or the "
            "index folder) to a path that is free"
        )
    why = _unwritable(existing)
    if why:
        raise BackendUnavailableError(
            f"cannot open the Milvus Lite database {uri}: cannot write in {existing} ({why}); set "
            "retriever.milvus.uri (or the index folder) to a path under a writable folder"
        )


def _unwritable(folder: Path) -> str | None:
    """Why ``folder`` cannot take a new file, or None. The mode bits first, then a real (unnamed)
    temporary file: root passes ``os.access`` everywhere, yet not on an immutable folder, a
    read-only mount, /sys or /proc. The system's words are kept where they say why; /proc's
    "No such file or directory" for a folder that is plainly there is said in plain words."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return "permission denied"
    try:
        with tempfile.TemporaryFile(dir=folder):
            return None
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return "a virtual file system: it takes no new files"
        if exc.errno == errno.EROFS:
            return "a read-only file system"
        return exc.strerror or reason(exc)  # (the probe's own name would only confuse)


@contextlib.contextmanager
def _lite_start_failure() -> Iterator[list[BaseException]]:
    """Collects (and keeps off stderr) the exception Milvus Lite logs when its server fails to
    start; pymilvus then raises only "Open local milvus failed"."""
    causes: list[BaseException] = []

    def grab(record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            causes.append(record.exc_info[1])
            return False
        return True

    logger = logging.getLogger("milvus_lite.server_manager")
    logger.addFilter(grab)
    try:
        yield causes
    finally:
        logger.removeFilter(grab)


def _lite_open_message(uri: str, failure: BaseException, causes: list[BaseException]) -> str:
    cause = causes[-1] if causes else None
    if cause is not None and type(cause).__name__ == "DataDirLockedError":
        return (
            f"cannot open the Milvus Lite database {uri}: another process has it open; Milvus Lite "
            "serves one process per file: stop the other process using it, or use a Milvus server "
            "for shared access"
        )
    why = _os_reason(cause) if isinstance(cause, OSError) else reason(cause or failure)
    return f"cannot open the Milvus Lite database {uri} ({why})"


def _os_reason(exc: OSError) -> str:
    """``strerror: filename``, without the ``[Errno n]`` noise."""
    text = exc.strerror or reason(exc)
    return f"{text}: {exc.filename}" if exc.filename else text


def reason(exc: BaseException) -> str:
    """The short message of a pymilvus exception (its repr is a class name and nothing else)."""
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:300]
