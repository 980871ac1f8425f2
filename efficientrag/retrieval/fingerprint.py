"""What a retriever searches, as one hash: an evaluation run records it, so a rerun over another
corpus, encoder or index type is not mistaken for the same run."""

from __future__ import annotations

from typing import Any

from efficientrag.errors import WrongTypeError
from efficientrag.fingerprint import json_digest

# Metadata that says when and by which version an index was written, not what it holds.
VOLATILE_META = frozenset({"created_at", "efficientrag_version"})


def retriever_fingerprint(retriever: Any) -> str:
    """A backend's own ``fingerprint()``, else a hash of its saved index metadata (corpus hash,
    encoder, index type and parameters), else of its class and corpus."""
    own = getattr(retriever, "fingerprint", None)
    if callable(own):
        return str(own())
    meta = getattr(retriever, "meta", None)
    if isinstance(meta, dict):
        return json_digest({k: v for k, v in meta.items() if k not in VOLATILE_META})
    corpus = getattr(retriever, "corpus", None)
    if corpus is not None and callable(getattr(corpus, "fingerprint", None)):
        cls = type(retriever)
        return json_digest({"class": f"{cls.__module__}.{cls.__qualname__}", "corpus": corpus.fingerprint()})
    raise WrongTypeError(
        f"{type(retriever).__name__} cannot be fingerprinted: give it a fingerprint() method that "
        "returns a hash of what it searches (collection, encoder, index settings)"
    )
