"""Deterministic fingerprints for the ``datasets`` cache of checked and tokenized training rows.

``Dataset.map`` would otherwise fingerprint the map function by pickling it with dill; a function
holding a tokenizer (or a whole model) pickles slowly and not always identically across processes,
and a cache keyed on that either misses every time or, worse, hits when it should not. These
fingerprints are computed from what actually decides the output instead: the bytes of the data
files, the tokenizer's full serialized definition, ``max_length``, the model kind, the row limit
and the source of the code that encodes rows. The same inputs give the same key in every process
(so ``accelerate`` workers share one cache), and changing any of them re-tokenizes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import efficientrag.models
from efficientrag.fingerprint import file_digest

# The modules whose code decides how a row becomes model inputs: any edit there re-tokenizes.
_CODE_DIRS = (Path(efficientrag.models.__file__).parent,)
_CODE_FILES = tuple(Path(__file__).parent / name for name in ("data.py", "encoded.py", "fingerprint.py"))


def tokenizer_digest(tokenizer: Any) -> str:
    """A fast tokenizer's complete definition (vocab, normalizer, pre-tokenizer, post-processor)."""
    h = hashlib.sha256(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        definition = json.loads(backend.to_str())
        # transformers rewrites these on every call (our calls pass truncation=False, no padding),
        # so they differ before and after the first use of the same tokenizer.
        definition.pop("truncation", None)
        definition.pop("padding", None)
        h.update(json.dumps(definition, sort_keys=True).encode())
    else:
        h.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    h.update(json.dumps(tokenizer.special_tokens_map, sort_keys=True, default=str).encode())
    return h.hexdigest()


def code_digest() -> str:
    files = sorted(p for d in _CODE_DIRS for p in d.glob("*.py")) + list(_CODE_FILES)
    return file_digest(files)


def fingerprint(**parts: Any) -> str:
    """A ``datasets``-valid fingerprint (hex) of JSON-serializable ``parts``."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:32]
