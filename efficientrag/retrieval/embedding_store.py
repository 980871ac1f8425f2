"""Corpus embeddings on disk in fixed-size shards, written one at a time so a killed run resumes.

Layout of ``<index_dir>/embeddings/``: ``manifest.json`` (what the embeddings depend on: encoder,
normalization, corpus fingerprint, shard size) and ``shard_00000.npy``... (float32, rows in corpus
order). A shard file appears only through an atomic rename, so an existing shard of the right
shape is complete; a rerun encodes only the missing ones. The whole matrix is never in memory:
the FAISS index is filled shard by shard from memory-mapped files.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from efficientrag.atomic import atomic_open, write_json_atomic
from efficientrag.data.corpus import Corpus
from efficientrag.errors import InvalidArgumentError, MissingFileError
from efficientrag.retrieval.errors import IndexMismatchError
from efficientrag.retrieval.meta import read_json

MANIFEST_FILE = "manifest.json"


class PassageEncoder(Protocol):
    dim: int

    def describe(self) -> dict[str, Any]: ...

    def encode_passages(self, texts: list[str], *, progress: Any = None) -> np.ndarray: ...


@dataclass(frozen=True)
class StoreSpec:
    """Everything the stored vectors depend on; any difference makes them unusable."""

    encoder: str
    dim: int
    normalize: bool
    max_length: int | None
    passage_prefix: str
    corpus_size: int
    corpus_fingerprint: str
    shard_size: int

    @classmethod
    def for_corpus(cls, encoder: PassageEncoder, corpus: Corpus, shard_size: int) -> StoreSpec:
        d = encoder.describe()
        return cls(
            encoder=d["encoder"],
            dim=int(d["dim"]),
            normalize=bool(d["normalize"]),
            max_length=d["max_length"],
            passage_prefix=d["passage_prefix"],
            corpus_size=len(corpus),
            corpus_fingerprint=corpus.fingerprint(),
            shard_size=shard_size,
        )


class EmbeddingStore:
    """Sharded float32 embeddings of one corpus under one encoder (see the module docstring).

    Use :meth:`open`, which checks (and writes) the manifest; the constructor does neither.

    Args:
        directory: The store's folder (``<index_dir>/embeddings``).
        spec: What the vectors depend on (encoder, corpus, shard size).
    """

    def __init__(self, directory: str | Path, spec: StoreSpec) -> None:
        self.directory = Path(directory)
        self.spec = spec

    @classmethod
    def open(cls, directory: str | Path, spec: StoreSpec, *, reset_stale: bool = False) -> EmbeddingStore:
        """Reuse the shards at ``directory`` if they were written for ``spec``; a store written for
        something else raises :class:`IndexMismatchError`, or is emptied when ``reset_stale``.

        Args:
            directory: The store's folder (created if needed).
            spec: What the vectors must have been made with.
            reset_stale: Empty a store written for another spec instead of failing.

        Returns:
            The store, its manifest written and half-written files of a killed run removed.

        Raises:
            IndexMismatchError: The folder holds vectors for another spec (and not ``reset_stale``).
        """
        store = cls(directory, spec)
        manifest_path = store.directory / MANIFEST_FILE
        if manifest_path.is_file():
            saved = read_json(manifest_path).get("spec", {})
            for f in fields(StoreSpec):
                if saved.get(f.name) != getattr(spec, f.name):
                    if not reset_stale:
                        raise IndexMismatchError(
                            manifest_path,
                            f.name,
                            saved.get(f.name),
                            getattr(spec, f.name),
                            hint=f"delete {store.directory} or rebuild (`efficientrag index --rebuild`)",
                        )
                    store.remove()
                    break
        store.directory.mkdir(parents=True, exist_ok=True)
        for leftover in store.directory.glob("*.tmp"):  # from a run killed mid-write
            leftover.unlink()
        store._write_manifest()
        return store

    # --- layout ---------------------------------------------------------------------------------

    @property
    def num_rows(self) -> int:
        """Rows in the store: one per corpus chunk."""
        return self.spec.corpus_size

    @property
    def num_shards(self) -> int:
        """Shards the corpus is split into (the last may be short)."""
        return -(-self.spec.corpus_size // self.spec.shard_size)

    def rows(self, shard: int) -> tuple[int, int]:
        """The corpus rows a shard holds.

        Args:
            shard: The shard number.

        Returns:
            ``(start, stop)``, stop exclusive.
        """
        start = shard * self.spec.shard_size
        return start, min(start + self.spec.shard_size, self.spec.corpus_size)

    def shard_path(self, shard: int) -> Path:
        """Where a shard's ``.npy`` file lives (whether or not it exists yet).

        Args:
            shard: The shard number.

        Returns:
            The file path.
        """
        return self.directory / f"shard_{shard:05d}.npy"

    def is_complete(self, shard: int) -> bool:
        """Whether a shard's file exists with the right dtype and shape (files appear only whole).

        Args:
            shard: The shard number.

        Returns:
            True when the shard need not be encoded again.
        """
        path = self.shard_path(shard)
        if not path.is_file():
            return False
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError):
            return False
        start, stop = self.rows(shard)
        return arr.dtype == np.float32 and arr.shape == (stop - start, self.spec.dim)

    def missing_shards(self) -> list[int]:
        """The shards still to encode.

        Returns:
            Their numbers, ascending.
        """
        return [i for i in range(self.num_shards) if not self.is_complete(i)]

    # --- writing --------------------------------------------------------------------------------

    def fill(self, corpus: Corpus, encoder: PassageEncoder, *, show_progress: bool = True) -> list[int]:
        """Encode every missing shard of ``corpus`` (``chunk.contents``); returns the shards encoded.

        Args:
            corpus: The corpus the store was opened for.
            encoder: The encoder the store was opened for.
            show_progress: Show one bar over all shards.

        Returns:
            The shard numbers encoded by this call (empty when the store was complete).

        Raises:
            ValueError: The corpus size differs from the spec's, or the encoder returned a wrong shape.
        """
        if len(corpus) != self.spec.corpus_size:
            raise InvalidArgumentError(
                f"corpus has {len(corpus)} chunks, the store expects {self.spec.corpus_size}"
            )
        todo = self.missing_shards()
        pending = sum(self.rows(i)[1] - self.rows(i)[0] for i in todo)
        with tqdm(
            total=self.num_rows,
            initial=self.num_rows - pending,
            desc="Encoding corpus",
            unit="passage",
            disable=not show_progress,
        ) as bar:
            for shard in todo:
                start, stop = self.rows(shard)
                texts = [corpus[i].contents for i in range(start, stop)]
                emb = encoder.encode_passages(texts, progress=bar)
                if emb.shape != (stop - start, self.spec.dim):
                    raise InvalidArgumentError(
                        f"encoder returned shape {emb.shape} for shard {shard}, "
                        f"expected {(stop - start, self.spec.dim)}"
                    )
                self._write_shard(shard, emb)
                self._write_manifest()
        return todo

    def _write_shard(self, shard: int, emb: np.ndarray) -> None:
        with atomic_open(self.shard_path(shard), "wb") as fh:
            np.save(fh, np.ascontiguousarray(emb, dtype=np.float32), allow_pickle=False)

    def _write_manifest(self) -> None:
        done = sum(1 for i in range(self.num_shards) if self.shard_path(i).is_file())
        write_json_atomic(
            self.directory / MANIFEST_FILE,
            {"spec": asdict(self.spec), "num_shards": self.num_shards, "shards_done": done},
        )

    def remove(self) -> None:
        """Delete the store's folder and everything in it."""
        if self.directory.is_dir():
            shutil.rmtree(self.directory)

    # --- reading --------------------------------------------------------------------------------

    def load_shard(self, shard: int) -> np.ndarray:
        """Read-only memory map of one complete shard.

        Args:
            shard: The shard number.

        Returns:
            A ``(rows, dim)`` float32 memory map.

        Raises:
            FileNotFoundError: The shard is missing or incomplete.
        """
        if not self.is_complete(shard):
            raise MissingFileError(
                f"{self.shard_path(shard)} is missing or incomplete; fill() the store first"
            )
        return np.load(self.shard_path(shard), mmap_mode="r", allow_pickle=False)

    def iter_shards(self) -> Iterator[tuple[int, np.ndarray]]:
        """``(first_row, shard)`` for every shard, in row order.

        Yields:
            The shard's first corpus row and its memory-mapped embeddings.
        """
        for shard in range(self.num_shards):
            yield self.rows(shard)[0], self.load_shard(shard)

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """The embeddings of ``rows`` (any order) without loading whole shards.

        Args:
            rows: Corpus row numbers.

        Returns:
            A ``(len(rows), dim)`` float32 array, in the order of ``rows``.
        """
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.spec.dim), dtype=np.float32)
        shard_of = rows // self.spec.shard_size
        for shard in np.unique(shard_of):
            sel = np.flatnonzero(shard_of == shard)
            out[sel] = self.load_shard(int(shard))[rows[sel] - self.rows(int(shard))[0]]
        return out
