"""Noticing that a request's client has gone, while the request waits for its answer.

Neither uvicorn nor Starlette cancels a handler whose client closed the connection: the handler
waits on, and its questions would be computed for nobody. Starlette's ``request.is_disconnected()``
only polls (it asks ``receive`` under an already-cancelled scope), so it would have to be called
in a loop. Once the body has been read, though, the next ``receive()`` of the ASGI connection
returns only when there is something to say, and for a request whose body is complete that is
``http.disconnect``: uvicorn's ``connection_lost`` sets it when the socket closes (and it comes,
too, once the response has been sent, when nobody is listening any more). So one task per waiting
request awaits that message and calls ``on_gone``; it is cancelled when the request is answered.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


@contextlib.asynccontextmanager
async def watch_disconnect(receive: Receive, on_gone: Callable[[], None]) -> AsyncIterator[None]:
    """Call ``on_gone`` if the client disconnects while the block runs.

    Args:
        receive: The request's ASGI ``receive`` (``request.receive``), after its body was read.
        on_gone: Called once, on the event loop, when ``http.disconnect`` arrives.
    """

    async def watch() -> None:
        while True:
            message = await receive()
            if message.get("type") == "http.disconnect":
                on_gone()
                return

    task = asyncio.get_running_loop().create_task(watch(), name="efficientrag-disconnect")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
