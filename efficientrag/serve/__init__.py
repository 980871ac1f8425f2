"""The HTTP service (``efficientrag serve``), its page and the remote client.

One process holds one loaded ``EfficientRAG`` (any backend) and answers over HTTP: ``app``
(``create_app``: state, routers, MCP, handlers, middleware), ``routers/`` (one ``APIRouter`` per
endpoint group), ``dependencies`` (app state, bearer token, deadline), ``batcher`` (concurrent
requests gathered into one ``retrieve_batch``), ``requests`` (what a request may ask, checked
early), ``wire`` (the JSON of a result, both directions), ``backend`` (backend failures and
readiness), ``metrics`` (Prometheus), ``security`` (the token's source, the body checks),
``startup`` and ``runner`` (open the index before the port, drain on SIGTERM), ``client``
(``RemoteEfficientRAG``) and ``static/`` (the page at ``/``). Needs the ``serve`` extra, except
``config``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RemoteEfficientRAG", "ServeConfig"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must not need httpx or FastAPI (the CLI reads ServeConfig first).
    if name == "RemoteEfficientRAG":
        from efficientrag.serve.client import RemoteEfficientRAG

        return RemoteEfficientRAG
    if name == "ServeConfig":
        from efficientrag.serve.config import ServeConfig

        return ServeConfig
    raise AttributeError(name)
