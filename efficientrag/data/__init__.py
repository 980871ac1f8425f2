"""efficientrag.data: records, dataset readers, the pooled corpus and the toy multi-hop world.

Names are imported on first use (PEP 562): ``efficientrag.jsonl`` imports
``efficientrag.data.errors``, so importing the readers here eagerly would make that a cycle.
"""

from __future__ import annotations

from efficientrag.lazy import lazy_exports

_EXPORTS = {
    "Chunk": "efficientrag.data.schema",
    "Example": "efficientrag.data.schema",
    "Corpus": "efficientrag.data.corpus",
    "DataFormatError": "efficientrag.data.errors",
    "SkippedRecord": "efficientrag.data.errors",
    "ReadResult": "efficientrag.data.readers.result",
    "read_hotpotqa": "efficientrag.data.readers.hotpotqa",
    "read_2wiki": "efficientrag.data.readers.twowiki",
    "read_musique": "efficientrag.data.readers.musique",
    "read_jsonl_dataset": "efficientrag.data.readers.jsonl_dataset",
    "read_title_corpus": "efficientrag.data.readers.title_corpus",
    "read_corpus_file": "efficientrag.data.readers.corpus_file",
    "read_toy_world": "efficientrag.data.readers.toy",
    "read_dataset": "efficientrag.data.readers.registry",
    "read_datasets_source": "efficientrag.data.readers.hub",
    "HubUnavailableError": "efficientrag.data.readers.hub",
    "canonical_dataset_name": "efficientrag.data.readers.registry",
    "PooledDataset": "efficientrag.data.pooling",
    "pool": "efficientrag.data.pooling",
    "DataConfig": "efficientrag.data.config",
    "SourceConfig": "efficientrag.data.config",
    "ToyWorldConfig": "efficientrag.data.config",
    "load_data": "efficientrag.data.loader",
    "read_source": "efficientrag.data.loader",
    "save_prepared": "efficientrag.data.loader",
    "load_prepared": "efficientrag.data.loader",
    "generate_toy_world": "efficientrag.data.toy_world",
    "write_toy_world": "efficientrag.data.toy_world",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
