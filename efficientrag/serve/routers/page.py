"""The page at ``/`` and its static files (``efficientrag/serve/static``), open without a token;
not in the API schema."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

from efficientrag.serve.errors import RequestError

# The page's files, by the name they are served under.
STATIC_FILES = {"page.js": "text/javascript", "page.css": "text/css"}
# The page loads nothing from elsewhere, and the browser enforces it.
# (blob: is the JSON link the page makes of the reply it holds.)
PAGE_CSP = (
    "default-src 'self'; connect-src 'self' blob:; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'"
)

router = APIRouter(include_in_schema=False)


@router.get("/")
async def page() -> Response:
    return _static("index.html", "text/html")


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC_FILES:
        raise RequestError(404, "path", f"no such file: {name}")
    return _static(name, STATIC_FILES[name])


def _static(name: str, media_type: str) -> Response:
    content = resources.files("efficientrag.serve").joinpath("static", name).read_bytes()
    headers = {"Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff"}
    return Response(content, media_type=media_type, headers=headers)
