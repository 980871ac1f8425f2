"""From a :class:`DataConfig` to a pooled dataset, and a prepared dataset to and from disk.

``save_prepared`` writes what every later stage reads (``corpus.jsonl``, ``examples.jsonl``,
``skipped.jsonl``, ``id_map.json``, ``stats.json``), so synthesis, indexing and evaluation
agree on one corpus without re-reading the raw files.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from efficientrag.atomic import write_json_atomic
from efficientrag.data.config import DataConfig, SourceConfig, ToyWorldConfig
from efficientrag.data.corpus import Corpus
from efficientrag.data.errors import SkippedRecord
from efficientrag.data.pooling import PooledDataset, pool
from efficientrag.data.readers.corpus_file import read_corpus_file
from efficientrag.data.readers.hotpotqa import read_hotpotqa
from efficientrag.data.readers.hub import HUB_DEFAULTS, is_datasets_source, read_datasets_source
from efficientrag.data.readers.jsonl_dataset import read_jsonl_dataset
from efficientrag.data.readers.registry import READERS, canonical_dataset_name
from efficientrag.data.readers.result import ReadResult
from efficientrag.data.readers.source import parse_json, read_text
from efficientrag.data.readers.toy import read_toy_world
from efficientrag.data.schema import Example
from efficientrag.errors import ConfigError, DataFormatError
from efficientrag.jsonl import read_jsonl, write_jsonl

log = logging.getLogger(__name__)

PREPARED_FILES = ("corpus.jsonl", "examples.jsonl", "skipped.jsonl", "id_map.json", "stats.json")

_EXAMPLE_FILES = {
    "hotpotqa": "hotpot_dev_distractor_v1.json (or IRCoT's hotpotqa dev JSONL)",
    "2wikimultihopqa": "dev.json",
    "musique": "musique_ans_v1.0_dev.jsonl",
    "jsonl": "questions.jsonl (plus corpus_path=corpus.jsonl)",
}


def load_data(cfg: DataConfig) -> PooledDataset:
    """Read every source the config names and pool them into one corpus.

    Args:
        cfg: The ``data:`` settings.

    Returns:
        The pooled dataset.

    Raises:
        ConfigError: A source is misconfigured (unknown dataset, missing path or corpus).
        DataFormatError: A file cannot be read or (``strict``) has bad records.
    """
    results: list[ReadResult] = []
    for i, src in enumerate(cfg.sources()):
        results.extend(
            read_source(src, strict=cfg.strict, toy=cfg.toy, key="" if i == 0 else f"extra[{i - 1}].")
        )
    return pool(results)


def read_source(
    src: SourceConfig, *, strict: bool = True, toy: ToyWorldConfig | None = None, key: str = ""
) -> list[ReadResult]:
    """The read results of one source: its questions, plus its extra corpus file if it names one.

    Args:
        src: The source.
        strict: Fail on a bad record (True) or skip it.
        toy: The toy world's settings, for ``dataset: toy`` (None: the defaults).
        key: Prefix of the config keys named in errors (``"extra[0]."`` for an extra source).

    Returns:
        One or two read results (the questions, then the extra corpus).

    Raises:
        ConfigError: The source is misconfigured.
        DataFormatError: A file cannot be read or (``strict``) has bad records.
    """
    try:
        name = canonical_dataset_name(src.dataset)
    except ValueError as exc:
        raise ConfigError(f"'{key}dataset': {exc}") from None
    if src.format != "auto" and name != "hotpotqa":
        raise ConfigError(
            f"'{key}format' is only for hotpotqa (distractor | ircot); got {src.format!r} for {name}"
        )
    if name == "toy":
        toy = toy or ToyWorldConfig()
        return [read_toy_world(src.path, strict=strict, limit=src.limit, **dataclasses.asdict(toy))]
    if name == "jsonl":
        if src.corpus_path is None:
            raise ConfigError(f"dataset 'jsonl' needs a corpus: set '{key}corpus_path' to a chunk JSONL")
        if src.path is None:  # a corpus and no question file: ask it questions with `retrieve -q`
            return [read_corpus_file(src.corpus_path, dataset=name)]
        return [read_jsonl_dataset(src.path, src.corpus_path, strict=strict, limit=src.limit)]
    if src.path is None:
        hub = f" or {key}path=hub to load it from the Hugging Face Hub" if name in HUB_DEFAULTS else ""
        raise ConfigError(
            f"dataset {name!r} needs its data file: set '{key}path' (e.g. {key}path=/data/{_EXAMPLE_FILES[name]}){hub}"
        )
    if is_datasets_source(src.path):
        if name not in HUB_DEFAULTS:
            raise ConfigError(f"'{key}path': {src.path!r} is a datasets source, which {name!r} cannot read")
        if src.format == "ircot":
            raise ConfigError(
                f"'{key}format': Hub and save_to_disk HotpotQA is read as distractor, not ircot"
            )
        result = read_datasets_source(name, src.path, split=src.split, strict=strict, limit=src.limit)
        return (
            [result] if src.corpus_path is None else [result, read_corpus_file(src.corpus_path, dataset=name)]
        )
    if name == "hotpotqa":
        result = read_hotpotqa(src.path, strict=strict, limit=src.limit, format=src.format)
    else:
        result = READERS[name](src.path, strict=strict, limit=src.limit)
    if src.corpus_path is None:
        return [result]
    return [result, read_corpus_file(src.corpus_path, dataset=name)]


def report_skipped(pooled: PooledDataset, listed_in: str | Path | None = None) -> int:
    """Say, in one line, how many records a lenient read (``data.strict=false``) skipped and where
    they are listed: otherwise only ``skipped.jsonl`` knew, and a run over fewer questions than the
    file holds looked complete.

    Args:
        pooled: The data read.
        listed_in: The file that lists each skipped record with its reason (None: the first
            record's reason is given instead).

    Returns:
        How many records were skipped.
    """
    n = len(pooled.skipped)
    if n:
        where = (
            f"each is listed with its reason in {listed_in}"
            if listed_in
            else f"the first: {pooled.skipped[0].error}"
        )
        log.warning("data.strict=false skipped %d bad record%s; %s", n, "" if n == 1 else "s", where)
    return n


def save_prepared(pooled: PooledDataset, out_dir: str | Path) -> Path:
    """Write a pooled dataset as the prepared folder every later stage reads.

    Args:
        pooled: The dataset.
        out_dir: The folder (created if needed); each file is written atomically.

    Returns:
        The folder.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pooled.corpus.save(out / "corpus.jsonl")
    write_jsonl(out / "examples.jsonl", (ex.to_dict() for ex in pooled.examples))
    write_jsonl(out / "skipped.jsonl", (s.to_dict() for s in pooled.skipped))
    write_json_atomic(out / "id_map.json", pooled.id_map)
    write_json_atomic(out / "stats.json", pooled.stats)
    return out


def load_prepared(out_dir: str | Path) -> PooledDataset:
    """Read back a folder written by :func:`save_prepared`, checking it still holds together.

    Args:
        out_dir: The prepared folder.

    Returns:
        The pooled dataset.

    Raises:
        DataFormatError: A file is missing or malformed, or a gold id is not in the corpus.
    """
    out = Path(out_dir)
    missing = [name for name in PREPARED_FILES if not (out / name).is_file()]
    if missing:
        raise DataFormatError(
            out,
            f"not a prepared dataset folder: missing {', '.join(missing)} "
            "(write one with efficientrag.data.save_prepared)",
        )
    corpus = Corpus.load(out / "corpus.jsonl")
    examples = []
    for lineno, rec in enumerate(read_jsonl(out / "examples.jsonl"), start=1):
        try:
            ex = Example.from_dict(rec)
        except (KeyError, TypeError, ValueError) as exc:
            raise DataFormatError(
                out / "examples.jsonl", f"not an example record ({exc})", line=lineno
            ) from exc
        for cid in ex.gold_chunk_ids:
            if cid not in corpus:
                raise DataFormatError(
                    out / "examples.jsonl",
                    f"gold chunk id {cid!r} is not in corpus.jsonl",
                    line=lineno,
                    record=ex.id,
                    field="gold_chunk_ids",
                )
        examples.append(ex)
    skipped = [
        SkippedRecord(error=str(r.get("error", "")), line=r.get("line"), record=r.get("record"))
        for r in read_jsonl(out / "skipped.jsonl")
    ]
    id_map = _read_json(out / "id_map.json", dict)
    stats = _read_json(out / "stats.json", dict)
    return PooledDataset(corpus=corpus, examples=examples, id_map=id_map, skipped=skipped, stats=stats)


def _read_json(path: Path, tp: type) -> Any:
    obj = parse_json(path, read_text(path))
    if not isinstance(obj, tp):
        raise DataFormatError(path, f"expected a JSON {tp.__name__}, got {type(obj).__name__}")
    return obj
