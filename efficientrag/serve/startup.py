"""``efficientrag serve``: everything that can fail is done before the port opens.

The same checks and the same order as ``efficientrag retrieve``: the model folders, the data (a
Milvus collection needs none, but must hold a ``--corpus`` given), the index built or opened, the
models loaded, then one probe search so that a backend that does not answer stops the start with
its name instead of failing the first request. Only then is the socket bound.
"""

from __future__ import annotations

from efficientrag.serve.config import ServeExperimentConfig


def serve(cfg: ServeExperimentConfig) -> int:
    """Open the loop of ``cfg`` and serve it (blocks until SIGTERM/SIGINT; 0 after a drained stop)."""
    from efficientrag.experiment import check_model_folders, search_backend, search_corpus
    from efficientrag.pipeline.efficientrag import EfficientRAG
    from efficientrag.retrieval.errors import BackendUnavailableError
    from efficientrag.serve.app import create_app
    from efficientrag.serve.backend import backend_name, probe
    from efficientrag.serve.runner import run_server
    from efficientrag.serve.security import api_key_from_env

    token = api_key_from_env()
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
    return run_server(create_app(rag, cfg.serve, backend=backend, token=token), cfg.serve)
