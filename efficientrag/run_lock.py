"""One writer per folder: a run folder is locked while a process appends to it.

Every resumable job appends records and, on a rerun, skips the ids already written. Two processes
on one folder at once both read the same "done" set, both append the same ids, and each reports
numbers computed from a mix of both (an evaluation once printed n=120 for 60 questions). So the
writer of a folder holds an exclusive ``flock`` on ``<folder>/.lock`` for as long as it writes:

- a second process refuses with one line naming the holder (PID, host, start time:
  :class:`FolderLockedError`), or, with ``wait=True``, waits until the holder is done;
- the kernel drops the lock when its holder dies, however it dies (``kill -9``, a power loss on
  the holder's side of an NFS mount aside), so a lock left by a dead process is always taken over;
  the lock file still names the dead holder, and the takeover is logged naming it;
- the lock is re-entrant within one process (the CLI binds a run folder, then the runner binds it
  again): a second ``flock`` on a new descriptor would conflict with the process's own first one.

Locks are advisory and POSIX only (``fcntl``); where ``fcntl`` is missing (Windows) folders are
not locked, and a warning says so once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from efficientrag.errors import EfficientRAGError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
# How often a waiting process tries the lock again (polling keeps Ctrl-C and other threads live).
POLL_SECONDS = 0.2


class FolderLockedError(EfficientRAGError, RuntimeError):
    """Another live process holds the folder's lock. The message is one line naming it."""

    def __init__(self, message: str, *, holder: Holder | None, lock_path: Path) -> None:
        super().__init__(message)
        self.holder = holder
        self.lock_path = lock_path


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: what the lock file says, so a refusal or a takeover can name it."""

    pid: int
    host: str
    started: str  # local time with its UTC offset, to the second

    @classmethod
    def this_process(cls) -> Holder:
        started = datetime.now().astimezone().isoformat(timespec="seconds")
        return cls(pid=os.getpid(), host=socket.gethostname(), started=started)

    def describe(self) -> str:
        return f"PID {self.pid} on {self.host}, started {self.started}"


@dataclass
class _Held:
    fd: int
    pid: int  # a forked child inherits the registry, not the right to the lock
    depth: int = 1


_held: dict[str, _Held] = {}
_registry = threading.Lock()
_warned_unlocked = False


def folder_lock(
    folder: str | Path,
    *,
    wait: bool = False,
    what: str = "folder",
    hint: str = "wait for it to finish, or ask to wait for it",
) -> contextlib.AbstractContextManager[Path]:
    """Hold ``<folder>/.lock`` exclusively for the body (:func:`path_lock`); yields its path.

    Args:
        folder: the folder whose writer this process becomes (created if missing).
        wait: when another process holds the lock, wait for it instead of refusing.
        what: how the refusal names the folder ("run folder", "synthesis folder").
        hint: the refusal's last words: what the user can do (e.g. the flag that waits).

    Raises:
        FolderLockedError: another live process holds the lock and ``wait`` is false.
    """
    return path_lock(Path(folder) / LOCK_FILE, wait=wait, what=f"{what} {Path(folder)}", hint=hint)


@contextlib.contextmanager
def path_lock(
    lock_path: str | Path, *, wait: bool = False, what: str, hint: str = "wait for it to finish"
) -> Iterator[Path]:
    """Hold the lock file ``lock_path`` exclusively for the body; yields its path. For a lock
    kept beside what it guards (a folder whose listing must not change, one file of several in a
    folder); :func:`folder_lock` is the usual form.

    Args:
        lock_path: the lock file (created if missing, with its folder).
        wait: when another process holds the lock, wait for it instead of refusing.
        what: what the lock guards, as the refusal and the takeover name it.
        hint: the refusal's last words: what the user can do.

    Raises:
        FolderLockedError: another live process holds the lock and ``wait`` is false.
    """
    path = Path(lock_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = os.path.realpath(path)
    _acquire(key, path, wait=wait, what=what, hint=hint)
    try:
        yield path
    finally:
        _release(key)


def read_holder(lock_path: str | Path) -> Holder | None:
    """The holder a lock file names (a live one, or a dead one that never released it); None for
    a lock file that is empty (released cleanly) or unreadable."""
    try:
        data = json.loads(Path(lock_path).read_text(encoding="utf-8") or "null")
        return Holder(pid=int(data["pid"]), host=str(data["host"]), started=str(data["started"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _acquire(key: str, path: Path, *, wait: bool, what: str, hint: str) -> None:
    global _warned_unlocked
    if fcntl is None:  # pragma: no cover - Windows
        if not _warned_unlocked:
            log.warning("folders are not locked on this platform (no fcntl): run one writer per folder")
            _warned_unlocked = True
        return
    announced = False
    while True:
        with _registry:
            held = _held.get(key)
            if held is not None and held.pid == os.getpid():
                held.depth += 1
                return
            fd = _try_lock(path)
            if fd is not None:
                _held[key] = _Held(fd=fd, pid=os.getpid())
                break
        holder = read_holder(path)
        named = holder.describe() if holder else "another process (it has not written its name yet)"
        if not wait:
            raise FolderLockedError(f"{what} is in use by {named}; {hint}", holder=holder, lock_path=path)
        if not announced:
            log.warning("%s is in use by %s; waiting for it to finish", what, named)
            announced = True
        time.sleep(POLL_SECONDS)
    previous = read_holder(path)
    if previous is not None:
        log.warning(
            "%s: took over the lock left by %s, which is no longer running", what, previous.describe()
        )
    _write_holder(fd, Holder.this_process())


def _try_lock(path: Path) -> int | None:
    """A descriptor of ``path`` holding its exclusive lock, or None while another holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    # The holder before us may have deleted the folder (and the lock file with it) on its way out:
    # a lock on a file that no longer has this name locks nothing anyone else will open.
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        same = False
    if not same:
        os.close(fd)
        return _try_lock(path)
    return fd


def _write_holder(fd: int, holder: Holder) -> None:
    data = json.dumps(asdict(holder)).encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _release(key: str) -> None:
    if fcntl is None:  # pragma: no cover - Windows
        return
    with _registry:
        held = _held[key]
        held.depth -= 1
        if held.depth > 0:
            return
        del _held[key]
        # Emptied before unlocking: a lock file that still names a holder was left by a dead one.
        with contextlib.suppress(OSError):
            os.ftruncate(held.fd, 0)
        fcntl.flock(held.fd, fcntl.LOCK_UN)
        os.close(held.fd)
