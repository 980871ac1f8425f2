"""A sentence-transformers model loaded once, encoding queries and passages to float32 matrices.

Passage encoding is the cost of indexing, so it batches by exact token length: every passage is
tokenized once up front (the Rust tokenizer, a few percent of the encode time on CPU) and batches
are cut from the passages sorted by that length. sentence-transformers sorts by *character*
length, which on 800 HotpotQA passages in batches of 32 leaves 22.6% of the computed positions as
padding; sorting by tokens leaves 7.9% (benchmarks/encode_throughput.py measures both). Each batch
is its own encode() call, since one call over many batches would re-sort them by characters.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from efficientrag.config_values import same_named
from efficientrag.data.corpus import Corpus
from efficientrag.errors import InvalidArgumentError
from efficientrag.hub import MINILM_ALIASES, OFFLINE_DEFAULT_ENCODER, minilm_path, resolve_model_path
from efficientrag.retrieval.config import RetrieverConfig

logger = logging.getLogger(__name__)

# Embedded at build time and again at load time: a model with other weights under the same name
# (a fine-tuned checkpoint saved over the old folder) gives a different vector.
PROBE_TEXT = "Probe: the Eiffel Tower is in Paris, and its designer was Gustave Eiffel."
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")
# Texts tokenized per call when counting the ones over the token limit (bounds the memory).
OVER_LIMIT_BATCH = 4096
# Chunk ids named in the over-limit warning (the count covers the rest).
OVER_LIMIT_SHOWN = 5
# RetrieverConfig fields that are Encoder arguments of the same name (from_config).
ENCODER_SETTINGS = (
    "normalize",
    "query_prefix",
    "passage_prefix",
    "max_length",
    "batch_size",
    "device",
    "backend",
    "compute_dtype",
    "num_threads",
)


def canonical_encoder_name(name: str) -> str:
    """The name recorded in index metadata: MiniLM aliases and its packaged folder map to the hub
    name; other local folders to their absolute path; hub names stay as given."""
    if name.lower() in MINILM_ALIASES:
        return OFFLINE_DEFAULT_ENCODER
    path = Path(name).expanduser()
    if path.exists():
        packaged = minilm_path()
        if packaged is not None and path.resolve() == Path(packaged).resolve():
            return OFFLINE_DEFAULT_ENCODER
        return str(path.resolve())
    return name


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class Encoder:
    """Query and passage embeddings from one sentence-transformers model.

    ``normalize=None`` keeps the model as shipped (a ``Normalize`` module or not); True adds L2
    normalization, False removes the model's own. ``normalize`` then holds the effective value,
    which is what index metadata records and checks.

    Args:
        name: A sentence-transformers model: Hub name, local folder, or the MiniLM alias of the
            packaged offline weights.
        normalize: L2-normalize embeddings (None: as the model ships).
        query_prefix: Text put before every query (replaces the model's own "query" prompt).
        passage_prefix: Text put before every passage.
        max_length: Tokens per text the model reads (None: the model's own limit).
        batch_size: Texts per encode batch.
        device: ``"auto"`` (CUDA when available, else CPU) or a torch device string.
        backend: The sentence-transformers backend: ``"torch"``, ``"onnx"`` or ``"openvino"``.
        compute_dtype: ``"float32"``, or ``"bfloat16"``/``"float16"`` under torch autocast
            (torch backend only).
        num_threads: Sets torch's CPU thread count (None: leave it).
        show_progress: Show a bar while encoding passages.

    Raises:
        ValueError: An unknown ``compute_dtype``, or a reduced one with a non-torch backend.
    """

    def __init__(
        self,
        name: str = OFFLINE_DEFAULT_ENCODER,
        *,
        normalize: bool | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        max_length: int | None = None,
        batch_size: int = 32,
        device: str = "auto",
        backend: str = "torch",
        compute_dtype: str = "float32",
        num_threads: int | None = None,
        show_progress: bool = True,
    ) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        if compute_dtype != "float32" and backend != "torch":
            raise InvalidArgumentError(
                f"compute_dtype={compute_dtype!r} needs backend='torch', got {backend!r}"
            )
        if compute_dtype not in COMPUTE_DTYPES:
            raise InvalidArgumentError(
                f"compute_dtype must be float32, bfloat16 or float16, got {compute_dtype!r}"
            )
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        self.name = canonical_encoder_name(name)
        self.device = resolve_device(device)
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.batch_size = batch_size
        self.compute_dtype = compute_dtype
        self.show_progress = show_progress
        self.model = SentenceTransformer(
            resolve_model_path(name), device=self.device, backend=backend, trust_remote_code=False
        )
        if max_length is not None:
            self.model.max_seq_length = max_length
        self.max_length: int | None = self.model.max_seq_length

        ships_normalized = any(type(m).__name__ == "Normalize" for m in self.model)
        self.normalize = ships_normalized if normalize is None else bool(normalize)
        if ships_normalized and not self.normalize:
            for idx in reversed(range(len(self.model))):
                if type(self.model[idx]).__name__ == "Normalize":
                    del self.model[idx]
        # Normalization the model does not do itself is asked of encode().
        self._normalize_in_encode = self.normalize and not ships_normalized
        self.pooling = _pooling_mode(self.model)
        self._length_tokenizer = _length_tokenizer(self.model, self.max_length)
        self._count_tokenizer: Any = None  # the same, untruncated (over_limit builds it when asked)
        dim = _embedding_dim(self.model)
        self.dim: int = dim if dim is not None else int(self._encode_document_batch([PROBE_TEXT]).shape[1])

    @classmethod
    def from_config(cls, cfg: RetrieverConfig, *, show_progress: bool = True) -> Encoder:
        """The encoder a retriever config describes (its dense fields).

        Args:
            cfg: The retriever config.
            show_progress: Show a bar while encoding passages.

        Returns:
            The loaded encoder.
        """
        return cls(cfg.encoder, show_progress=show_progress, **same_named(cfg, ENCODER_SETTINGS))

    # ------------------------------------------------------------------------------------------

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """One ``(len(texts), dim)`` float32 matrix; the model's "query" prompt applies unless
        ``query_prefix`` is set.

        Args:
            texts: The queries.

        Returns:
            Their embeddings, in input order.
        """
        texts = list(texts)
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        with self._autocast():
            emb = self.model.encode_query(
                texts,
                prompt=self.query_prefix or None,
                batch_size=self.batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=self._normalize_in_encode,
            )
        return np.ascontiguousarray(emb, dtype=np.float32)

    def encode_passages(
        self, texts: Sequence[str], *, progress: Any = None, show_progress: bool | None = None
    ) -> np.ndarray:
        """``(len(texts), dim)`` float32 in input order, computed in token-length-sorted batches.

        ``progress``: an open tqdm bar to advance (the embedding store keeps one bar over all
        shards); otherwise a bar of its own when ``show_progress`` (default: the encoder's).

        Args:
            texts: The passages (chunk contents).
            progress: An open tqdm bar to advance instead of opening one.
            show_progress: Show a bar of its own (None: the encoder's setting).

        Returns:
            Their embeddings, in input order.
        """
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        order = np.argsort(-self.token_lengths(texts), kind="stable")
        show = self.show_progress if show_progress is None else show_progress
        own_bar = progress is None
        bar = (
            tqdm(total=len(texts), desc="Encoding passages", unit="passage", disable=not show)
            if own_bar
            else progress
        )
        try:
            for start in range(0, len(texts), self.batch_size):
                idx = order[start : start + self.batch_size]
                out[idx] = self._encode_document_batch([texts[i] for i in idx])
                bar.update(len(idx))
        finally:
            if own_bar:
                bar.close()
        return out

    def token_lengths(self, texts: Sequence[str]) -> np.ndarray:
        """Tokens per text after truncation (prefix included); character counts if the model
        has no fast tokenizer.

        Args:
            texts: Passages.

        Returns:
            One int64 count per text.
        """
        prefix = self.passage_prefix
        if self._length_tokenizer is None:
            return np.fromiter((len(prefix) + len(t) for t in texts), dtype=np.int64, count=len(texts))
        encodings = self._length_tokenizer.encode_batch([prefix + t for t in texts])
        return np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))

    def over_limit(self, texts: Sequence[str]) -> list[int]:
        """Positions of the texts longer than ``max_length`` tokens (passage prefix and special
        tokens included): the model embeds their first ``max_length`` tokens only. Empty when the
        model has no limit or no fast tokenizer (then nothing can be counted).

        Args:
            texts: Passages.

        Returns:
            The positions (in ``texts``) of the ones that will be cut.
        """
        if not self.max_length or self._length_tokenizer is None:
            return []
        if self._count_tokenizer is None:
            self._count_tokenizer = _length_tokenizer(self.model, None)
        prefix, out = self.passage_prefix, []
        for start in range(0, len(texts), OVER_LIMIT_BATCH):
            batch = [prefix + t for t in texts[start : start + OVER_LIMIT_BATCH]]
            encodings = self._count_tokenizer.encode_batch(batch)
            out.extend(start + i for i, e in enumerate(encodings) if len(e.ids) > self.max_length)
        return out

    def probe(self) -> np.ndarray:
        """The passage embedding of a fixed sentence: a fingerprint of the weights and settings.

        Returns:
            A ``(dim,)`` float32 vector.
        """
        return self.encode_passages([PROBE_TEXT], show_progress=False)[0]

    def describe(self) -> dict[str, Any]:
        """What an index depends on, as recorded in its metadata.

        Returns:
            ``encoder``, ``dim``, ``normalize``, ``pooling``, ``max_length``, ``passage_prefix``.
        """
        return {
            "encoder": self.name,
            "dim": self.dim,
            "normalize": self.normalize,
            "pooling": self.pooling,
            "max_length": self.max_length,
            "passage_prefix": self.passage_prefix,
        }

    # ------------------------------------------------------------------------------------------

    def _encode_document_batch(self, texts: list[str]) -> np.ndarray:
        # One encode call per (already length-sorted) batch: a call over many batches would
        # re-sort them by characters.
        with self._autocast():
            emb = self.model.encode_document(
                texts,
                prompt=self.passage_prefix or None,
                batch_size=len(texts),
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=self._normalize_in_encode,
            )
        return np.asarray(emb, dtype=np.float32)

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.compute_dtype == "float32":
            return contextlib.nullcontext()
        import torch

        device_type = self.device.split(":")[0]
        return torch.autocast(device_type=device_type, dtype=getattr(torch, self.compute_dtype))


def warn_over_limit(corpus: Corpus, encoder: Any) -> list[int]:
    """Warn once, before a corpus is encoded, about the chunks the encoder will cut at its token
    limit: their tails would be missing from the index without a word. Returns their positions."""
    count = getattr(encoder, "over_limit", None)  # a stand-in encoder may have no tokenizer
    over = count([c.contents for c in corpus]) if count is not None else []
    if over:
        ids = ", ".join(repr(corpus[i].id) for i in over[:OVER_LIMIT_SHOWN])
        more = ", ..." if len(over) > OVER_LIMIT_SHOWN else ""
        logger.warning(
            "%d of %d chunks are longer than the encoder's limit of %d tokens and are embedded from "
            "their first %d tokens only (chunk ids %s%s); split them into shorter chunks, or raise "
            "retriever.max_length if the model allows it",
            len(over),
            len(corpus),
            encoder.max_length,
            encoder.max_length,
            ids,
            more,
        )
    return over


def _modules(model: Any) -> Iterator[Any]:
    try:
        yield from iter(model)
    except TypeError:
        return


def _pooling_mode(model: Any) -> str | None:
    for module in _modules(model):
        if type(module).__name__ == "Pooling":
            mode = getattr(module, "pooling_mode", None)
            if mode is None and hasattr(module, "get_pooling_mode_str"):
                mode = module.get_pooling_mode_str()
            return str(mode) if mode is not None else None
    return None


def _embedding_dim(model: Any) -> int | None:
    for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        fn = getattr(model, attr, None)
        if fn is not None:
            dim = fn()
            if dim:
                return int(dim)
    return None


def _length_tokenizer(model: Any, max_length: int | None) -> Any:
    """A copy of the model's Rust tokenizer set to truncate like the model and never pad."""
    tokenizer = getattr(model, "tokenizer", None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        logger.info("no fast tokenizer: passages are length-sorted by characters")
        return None
    backend = copy.deepcopy(backend)
    backend.no_padding()
    if max_length:
        backend.enable_truncation(max_length)
    else:
        backend.no_truncation()
    return backend
