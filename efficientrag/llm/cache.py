"""Persistent response cache: re-running a synthesis or evaluation job costs nothing twice.

One sqlite database in WAL mode under ``cache_dir``. Every ``put`` is its own committed transaction,
so a process killed at any moment (SIGKILL included) leaves a consistent database that at worst
lacks the entry being written; several processes may read and write it at once (sqlite's locking,
with a generous busy timeout). ``synchronous=NORMAL`` trades durability on power loss (the last
few entries may be lost, never corrupted) for speed.

The key is the sha256 of the canonical JSON of everything that changes the output: endpoint kind,
model, messages or prompt, sampling parameters and extra body fields. Credentials and headers are
never part of the request dict, so they can be neither in the key nor in the stored row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from efficientrag.closing import Closing

log = logging.getLogger(__name__)

CACHE_FILE_NAME = "llm_cache.sqlite"
# Bump when the stored response format changes; old rows then simply miss.
CACHE_FORMAT = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def cache_key(kind: str, request: dict[str, Any], extra_body: dict[str, Any] | None = None) -> str:
    """sha256 over (format, endpoint kind, request fields, extra body fields).

    Args:
        kind: The endpoint: ``"chat"`` or ``"completions"``.
        request: Everything sent that changes the output: model, messages or prompt, sampling
            parameters (never credentials or headers).
        extra_body: Extra request-body fields (vendor parameters).

    Returns:
        The key, 64 hex digits.
    """
    payload = {"format": CACHE_FORMAT, "kind": kind, "request": request, "extra_body": extra_body or {}}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class ResponseCache(Closing):
    """A key -> response-dict store shared by threads (one connection behind a lock) and processes.

    Args:
        cache_dir: The folder of the sqlite file (created if needed).
        busy_timeout_s: Seconds to wait for another process's write lock before failing.

    Raises:
        sqlite3.DatabaseError: The file exists but is not a usable database.
    """

    def __init__(self, cache_dir: str | Path, *, busy_timeout_s: float = 60.0) -> None:
        self.dir = Path(cache_dir).expanduser()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / CACHE_FILE_NAME
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
            mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                log.warning("LLM cache %s: could not enable WAL (journal_mode=%s)", self.path, mode)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise sqlite3.DatabaseError(
                f"LLM cache {self.path} cannot be opened ({exc}); move it away to start a fresh cache"
            ) from exc

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response for a key (an unreadable entry counts as a miss).

        Args:
            key: A :func:`cache_key`.

        Returns:
            The response dict, or None on a miss.
        """
        with self._lock:
            row = self._conn.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
        except json.JSONDecodeError:
            log.warning("LLM cache %s: unreadable entry %s ignored", self.path, key[:12])
            return None
        return data if isinstance(data, dict) else None

    def put(
        self, key: str, *, kind: str, model: str, request: dict[str, Any], response: dict[str, Any]
    ) -> None:
        """Store a response, replacing any under the same key, in its own committed transaction.

        Args:
            key: A :func:`cache_key`.
            kind: The endpoint kind (stored for inspection).
            model: The model name (stored for inspection).
            request: The request the key was made from (stored for inspection).
            response: The response dict to return on later hits.
        """
        row = (key, kind, model, canonical_json(request), canonical_json(response), time.time())
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, kind, model, request, response, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                row,
            )

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the database connection; the cache cannot be used afterwards."""
        with self._lock:
            self._conn.close()
