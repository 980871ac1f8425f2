"""The OpenAPI schema with this server's caps: what the server refuses, the schema says.

The request models declare what the loop's config allows (``LoopSettings`` takes each setting's
range from ``EfficientRAGConfig``), but some limits are the server's own settings: a ``top_k`` or
``max_hops`` above ``serve.max_top_k`` / ``serve.max_hops``, more questions than
``serve.max_questions``, more queries than ``serve.max_queries``. The models are built once, for
every server, so those caps are written into the schema when the app first serves it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from efficientrag.serve.config import ServeConfig


def server_caps(cfg: ServeConfig) -> dict[tuple[str, str], dict[str, int]]:
    """(schema, property) -> the JSON-schema keywords the server's settings add there."""
    return {
        ("LoopSettings", "top_k"): {"maximum": cfg.max_top_k},
        ("LoopSettings", "first_top_k"): {"maximum": cfg.max_top_k},
        ("LoopSettings", "max_hops"): {"maximum": cfg.max_hops},
        ("RetrieveRequest", "questions"): {"maxItems": cfg.max_questions},
        ("SearchR1Request", "queries"): {"maxItems": cfg.max_queries},
    }


def with_server_caps(app: FastAPI, cfg: ServeConfig) -> Callable[[], dict[str, Any]]:
    """``app.openapi`` that adds :func:`server_caps` to FastAPI's own schema (once; it is cached).

    Args:
        app: The app whose schema FastAPI generates.
        cfg: The server's settings.
    """
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        models = schema.get("components", {}).get("schemas", {})
        for (model, name), keywords in server_caps(cfg).items():
            prop = models.get(model, {}).get("properties", {}).get(name)
            if prop is None:
                continue
            # Beside the field's own bounds (a keyword for numbers or arrays holds for those only,
            # so an optional field's null stays valid).
            for key, value in keywords.items():
                prop[key] = min(value, prop.get(key, value))
        return schema

    return openapi
