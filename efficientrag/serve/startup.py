"""``efficientrag serve``: everything that can fail is done before the port opens.

The same checks and the same order as ``efficientrag retrieve``: the model folders, the data (a
Milvus collection needs none, but must hold a ``--corpus`` given), the index built or opened, the
models loaded, then one probe search so that a backend that does not answer stops the start with
its name instead of failing the first request. Only then is the socket bound.

With ``serve.workers`` above 1 this process does all of that once (so the index is built once, not
by several processes at the same time), then each worker process opens the built index and the
models again for itself (``workers``).
"""

from __future__ import annotations

import functools
from typing import Any

from efficientrag.serve.config import ServeExperimentConfig


def serve(cfg: ServeExperimentConfig) -> int:
    """Open the loop of ``cfg`` and serve it (blocks until SIGTERM/SIGINT; 0 after a drained stop)."""
    from efficientrag.serve.runner import run_server
    from efficientrag.serve.workers import run_workers, set_torch_threads

    if cfg.serve.workers == 1:
        if cfg.serve.threads:
            set_torch_threads(cfg.serve.threads)
        return run_server(open_app(cfg), cfg.serve)
    open_loop(cfg)  # fail here, once, before the port opens
    return run_workers(functools.partial(open_app, cfg), cfg.serve)


def open_app(cfg: ServeExperimentConfig) -> Any:
    """The app over the loop of ``cfg``, with the corpus rows' own Search-R1 contents."""
    from efficientrag.serve.app import create_app
    from efficientrag.serve.contents import read_contents
    from efficientrag.serve.security import api_key_from_env

    token = api_key_from_env()
    rag, backend = open_loop(cfg)
    contents = read_contents(src.corpus_path for src in cfg.data.sources() if src.corpus_path)
    return create_app(rag, cfg.serve, backend=backend, token=token, contents=contents)


def open_loop(cfg: ServeExperimentConfig) -> tuple[Any, str]:
    """The loaded ``EfficientRAG`` and its backend's name, after one probe search."""
    from efficientrag.experiment.assembly import check_model_folders, search_backend, search_corpus
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.retrieval.errors import BackendUnavailableError
    from efficientrag.serve.backend import backend_name, probe
    from efficientrag.serve.security import api_key_from_env

    api_key_from_env()  # a blank token is refused before anything is loaded
    check_model_folders(cfg, "efficientrag")
    retriever = search_backend(cfg, search_corpus(cfg))
    rag = EfficientRAG.from_config(retriever, cfg.efficientrag)
    backend = backend_name(cfg.retriever.kind, retriever)
    try:
        probe(retriever)
    except BackendUnavailableError:
        raise
    except Exception as exc:
        raise BackendUnavailableError(
            f"search backend {backend} did not answer a probe search: {exc}"
        ) from exc
    return rag, backend
