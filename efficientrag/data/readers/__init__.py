"""Dataset readers: one function per source format, each returning a :class:`ReadResult`."""

from efficientrag.data.readers.corpus_file import read_corpus_file
from efficientrag.data.readers.hotpotqa import read_hotpotqa
from efficientrag.data.readers.hub import HUB_DEFAULTS, HubUnavailableError, read_datasets_source
from efficientrag.data.readers.jsonl_dataset import read_jsonl_dataset
from efficientrag.data.readers.musique import read_musique
from efficientrag.data.readers.registry import ALIASES, READERS, canonical_dataset_name, read_dataset
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.title_corpus import read_title_corpus, title_chunk_id
from efficientrag.data.readers.toy import read_toy_world
from efficientrag.data.readers.twowiki import read_2wiki

__all__ = [
    "ALIASES",
    "HUB_DEFAULTS",
    "HubUnavailableError",
    "READERS",
    "ReadResult",
    "canonical_dataset_name",
    "read_2wiki",
    "read_corpus_file",
    "read_dataset",
    "read_datasets_source",
    "read_hotpotqa",
    "read_jsonl_dataset",
    "read_musique",
    "read_title_corpus",
    "read_toy_world",
    "title_chunk_id",
]
