"""Errors for saved indexes: a missing index, or one built with settings other than those requested.

Searching an index with an encoder, normalization or corpus other than the ones it was built with
does not fail by itself: it silently returns wrong chunks. These errors make that mistake loud and
say how to fix it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from efficientrag.errors import EfficientRAGError

REBUILD_HINT = "rebuild it with `efficientrag index --rebuild` (or build_retriever(..., rebuild=True))"


class IndexNotFoundError(EfficientRAGError, FileNotFoundError):
    """No complete index at the given folder.

    Args:
        index_dir: The folder that was searched.
        detail: What is missing, added to the message.
    """

    def __init__(self, index_dir: str | Path, detail: str = "") -> None:
        self.index_dir = str(index_dir)
        msg = f"no complete retrieval index at {self.index_dir}"
        if detail:
            msg += f": {detail}"
        msg += "; build it first with `efficientrag index` (or build_retriever(cfg, corpus, index_dir))"
        super().__init__(msg)


class IndexMismatchError(EfficientRAGError, ValueError):
    """A saved index (or partial embeddings) disagrees with the requested settings on ``field``.

    Args:
        location: The file or folder whose metadata disagrees.
        field: The setting that differs.
        saved: Its value at build time.
        requested: The value asked for now.
        hint: What to do about it (default: rebuild the index).
    """

    def __init__(
        self, location: str | Path, field: str, saved: Any, requested: Any, *, hint: str = REBUILD_HINT
    ) -> None:
        self.location = str(location)
        self.field = field
        self.saved = saved
        self.requested = requested
        super().__init__(
            f"{self.location}: built with {field}={_show(saved)}, but {field}={_show(requested)} was "
            f"requested. Use the saved setting, or {hint}"
        )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


class CorpusMismatchError(IndexMismatchError):
    """A collection filled from one corpus, opened to search another.

    Nothing else would fail: its hits are chunks of the corpus that filled it, which evaluation
    scores against the other corpus's gold ids and a run reads as that corpus's chunks.

    Args:
        location: The collection, as errors name it.
        saved: What filled it (``"2382 chunks, fingerprint 1a2b..."``); None when it does not say
            (a collection not filled by ``efficientrag index``).
        corpus_name: The corpus named now (its file, or "the toy world").
        requested: That corpus, as ``saved``.
        hint: What to do about it.
    """

    def __init__(
        self, location: str | Path, saved: str | None, corpus_name: str, requested: str, *, hint: str
    ) -> None:
        self.location = str(location)
        self.field = "corpus"
        self.saved = saved
        self.requested = requested
        self.corpus_name = corpus_name
        if saved is None:
            head = (
                f"{self.location} does not record which corpus filled it (it was not filled by "
                f"`efficientrag index`), so it cannot be checked against {corpus_name} ({requested})"
            )
        else:
            head = (
                f"{self.location} was filled from another corpus ({saved}) than {corpus_name} ({requested})"
            )
        ValueError.__init__(self, f"{head}; {hint}")


class BackendUnavailableError(EfficientRAGError, RuntimeError):
    """A search backend cannot be used: its package is not installed or its server does not answer.

    One line that names the uri or the pip command; the CLI prints it instead of a traceback.
    """
