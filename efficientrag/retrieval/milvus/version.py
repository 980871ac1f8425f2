"""Which Milvus a uri answers with, and whether it has full-text (BM25) search.

Milvus gained the BM25 function in 2.5. An older server accepts the collection schema and then
fails deep inside ``create_index`` with ``MilvusException: create index on 104 field is not
supported`` (104 being the sparse-vector type), leaving a half-made collection behind. Reading the
version right after connecting turns that into one line saying what works on the server instead.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from efficientrag.retrieval.errors import BackendUnavailableError
from efficientrag.retrieval.milvus.config import MilvusConfig

log = logging.getLogger(__name__)

FULL_TEXT_MIN = (2, 5)
# Milvus Lite 3.x answers GetVersion with "milvus_lite-<its own version>"; it has BM25 (the
# `milvus` extra requires milvus-lite >= 3.2), so its numbers are not Milvus server numbers.
LITE_PREFIX = "milvus_lite"


def server_version(client: Any, timeout_s: float) -> str | None:
    """The version string the server reports, or None when it does not answer GetVersion (a proxy
    or cloud endpoint without it): the check then stays out of the way rather than guess."""
    try:
        return str(client.get_server_version(timeout=timeout_s))
    except Exception as exc:  # noqa: BLE001 - any failure here only skips the check
        log.debug("GetVersion failed (%s); not checking for full-text search", exc)
        return None


def parse_version(version: str) -> tuple[int, int] | None:
    """(major, minor) of a Milvus server's version ("v2.3.5-lite", "2.5.4", "Zilliz Cloud ...
    (Compatible with Milvus 2.5)"); None for Milvus Lite or an unreadable string."""
    if version.startswith(LITE_PREFIX):
        return None
    match = re.search(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_full_text(cfg: MilvusConfig, uri: str, version: str | None) -> None:
    """Raise when the settings need BM25 (``search: bm25`` / ``hybrid``, or ``store: bm25`` /
    ``both``) and ``version`` is a Milvus server older than 2.5.

    Args:
        cfg: the ``retriever.milvus`` settings of the run.
        uri: the uri connected to, for the message.
        version: what ``server_version`` read (None: unknown, not checked).
    """
    if not cfg.has_bm25 or version is None:
        return
    parsed = parse_version(version)
    if parsed is None or parsed >= FULL_TEXT_MIN:
        return
    msg = (
        f"Milvus server at {uri} is {version}; search: bm25 and hybrid need Milvus >= 2.5 "
        "(full-text search); `search: dense` works on this server"
    )
    if cfg.search == "dense":  # the BM25 field was asked for by milvus.store
        msg += f" with store: dense (not {cfg.stored!r})"
    raise BackendUnavailableError(msg)
