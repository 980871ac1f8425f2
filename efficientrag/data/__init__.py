"""efficientrag.data: records, dataset readers, the pooled corpus and the toy multi-hop world.

Names are imported on first use (PEP 562): ``efficientrag.jsonl`` imports
``efficientrag.data.errors``, so importing the readers here eagerly would make that a cycle.
"""

from __future__ import annotations

from efficientrag.lazy import by_module, lazy_exports

_EXPORTS = by_module(
    __name__,
    {
        "schema": ("Chunk", "Example"),
        "corpus": ("Corpus",),
        "errors": ("SkippedRecord",),
        "readers.result": ("ReadResult",),
        "readers.hotpotqa": ("read_hotpotqa",),
        "readers.twowiki": ("read_2wiki",),
        "readers.musique": ("read_musique",),
        "readers.jsonl_dataset": ("read_jsonl_dataset",),
        "readers.title_corpus": ("read_title_corpus",),
        "readers.corpus_file": ("read_corpus_file",),
        "readers.toy": ("read_toy_world",),
        "readers.registry": ("read_dataset", "canonical_dataset_name"),
        "readers.hub": ("read_datasets_source", "HubUnavailableError"),
        "pooling": ("PooledDataset", "pool"),
        "config": ("DataConfig", "SourceConfig", "ToyWorldConfig"),
        "loader": ("load_data", "read_source", "save_prepared", "load_prepared"),
        "toy_world": ("generate_toy_world", "write_toy_world"),
    },
)
# Raised by readers at every level, so it lives below them all (efficientrag.errors).
_EXPORTS["DataFormatError"] = "efficientrag.errors"

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
