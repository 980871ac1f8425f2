"""Run an app under uvicorn: bind first (a clear error for a port in use), drain on SIGTERM, exit 0.

uvicorn already stops accepting on SIGTERM/SIGINT, waits for the requests in flight, then runs the
app's shutdown (the batcher finishes its batch). Afterwards it re-raises the signal it caught,
which would end the process with the signal instead of 0; so while it runs, both signals have a
handler of ours that only records them, and the drained stop is a normal return.
"""

from __future__ import annotations

import logging
import signal
import socket
from typing import Any

from efficientrag.errors import InvalidArgumentError
from efficientrag.serve.config import ServeConfig

log = logging.getLogger(__name__)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (port 0: any free port), or a ValueError that names host and port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InvalidArgumentError(f"serve: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def listening(sock: socket.socket, cfg: ServeConfig, workers: int = 1) -> None:
    """The line the operator (and the tests) read the address from."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    log.info("listening on http://%s:%d%s", shown, port, f" ({workers} workers)" if workers > 1 else "")
    if cfg.host not in ("127.0.0.1", "::1", "localhost"):
        log.warning("serve.host=%s: reachable from other machines; see docs/serve.md (token, TLS)", cfg.host)


def run_server(
    app: Any, cfg: ServeConfig, *, log_level: str = "info", sock: socket.socket | None = None
) -> int:
    """Serve until SIGTERM or SIGINT; 0 after a drained stop. ``sock``: a socket already bound (a
    worker process of ``serve.workers`` gets its parent's); None: bind ``cfg.host:cfg.port`` here."""
    import uvicorn

    own = sock is None
    if sock is None:
        sock = bind(cfg.host, cfg.port)
        listening(sock, cfg)
    config = uvicorn.Config(
        app,
        log_config=None,  # keep the CLI's logging; uvicorn's own would replace it
        log_level=log_level,
        access_log=cfg.access_log,
        lifespan="on",
        timeout_graceful_shutdown=None,
        server_header=False,
    )
    server = uvicorn.Server(config)
    stops: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda s, _f: stops.append(s)) for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if own:
            sock.close()
    if not server.started:
        return 1
    log.info("stopped after finishing the requests in flight")
    return 0
