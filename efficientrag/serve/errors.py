"""Every refusal the service sends: one status, the field (or part) it is about, one message.

A client (or a person with curl) should read what to change without the server's log: the reply
is ``{"detail": "<field>: <message>", "field": "<field>"}``, the shape FastAPI's own errors have
(``detail``) plus the field on its own for programs.
"""

from __future__ import annotations

from typing import Any

from efficientrag.errors import EfficientRAGError
from efficientrag.serve.admission import Overloaded, QueueFull, Refused, Shed
from efficientrag.serve.backend import BackendFailure

# Error kinds, as counted by /metrics (efficientrag_errors_total{kind=...}).
INVALID = "invalid_request"
UNAUTHORIZED = "unauthorized"
BODY_TOO_LARGE = "body_too_large"
QUEUE_FULL = "queue_full"
OVERLOADED = "overloaded"
SHED = "shed"
IMPOSSIBLE_DEADLINE = "impossible_deadline"
DEADLINE = "deadline"
CLIENT_GONE = "client_gone"
BACKEND = "backend"
INTERNAL = "internal"


class RequestError(EfficientRAGError):
    """A reply other than 200, raised anywhere while serving a request."""

    def __init__(
        self,
        status: int,
        field: str,
        message: str,
        *,
        kind: str = INVALID,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{field}: {message}")
        self.status = status
        self.field = field
        self.message = message
        self.kind = kind
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"detail": f"{self.field}: {self.message}", "field": self.field}


def from_backend(exc: BackendFailure) -> RequestError:
    """502 when the backend answered wrongly, 503 (with Retry-After) when it cannot be reached."""
    headers = {"Retry-After": "5"} if exc.unavailable else None
    return RequestError(exc.status, "backend", str(exc), kind=BACKEND, headers=headers)


def from_refusal(exc: Refused) -> RequestError:
    """503 for a request refused before it was queued; with ``Retry-After`` when waiting helps."""
    kind = {QueueFull: QUEUE_FULL, Overloaded: OVERLOADED, Shed: SHED}.get(type(exc), IMPOSSIBLE_DEADLINE)
    headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s is not None else None
    return RequestError(503, exc.field, str(exc), kind=kind, headers=headers)


def validation_error(errors: list[dict[str, Any]], allowed_settings: tuple[str, ...]) -> RequestError:
    """The first of FastAPI's validation errors as one ``RequestError`` naming its field: 400 for a
    body that is not JSON, 422 for the rest."""
    err = errors[0]
    loc = [part for part in err.get("loc", ()) if part != "body"]
    field = _field_path(loc) or "body"
    kind = err.get("type", "")
    if kind == "json_invalid":
        what = err.get("ctx", {}).get("error", "") or err.get("msg", "")
        at = f" at character {loc[0]}" if loc and isinstance(loc[0], int) else ""
        return RequestError(400, "body", f"malformed JSON{at} ({what})")
    if kind == "extra_forbidden":
        if loc and loc[0] == "settings":
            return RequestError(
                422, field, f"unknown setting; a request may set only: {', '.join(allowed_settings)}"
            )
        return RequestError(422, field, "unknown field")
    if kind == "missing":
        return RequestError(422, field, "required")
    if kind in ("model_attributes_type", "dict_type") and field == "body":
        return RequestError(422, "body", "expected a JSON object")
    return RequestError(422, field, str(err.get("msg", "invalid value")))


def _field_path(loc: list[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
