"""FlashRank's pairwise rerankers as the ``rerank`` method's scorer.

FlashRank ships small ONNX cross-encoders (``ms-marco-TinyBERT-L-2-v2``, ``ms-marco-MiniLM-L-12-v2``
...) that run on ONNX Runtime without torch; LangChain's ``FlashrankRerank`` wraps it, so it is a
reranker many pipelines deploy as they are. ``baselines.rerank.model: flashrank:<name>`` selects one.
FlashRank keeps each model in ``<cache>/<name>/`` and downloads it there on first use; the cache is
``$EFFICIENTRAG_FLASHRANK_CACHE`` (default ``~/.cache/efficientrag/flashrank``), and with
``HF_HUB_OFFLINE`` set a model missing from it is an error, not a download. The folder's content is
hashed into a run's fingerprint like any reranker folder. Its listwise LLM ranker is refused: it
orders passages without a score per pair.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from efficientrag.errors import InvalidArgumentError, MissingExtraError, MissingFileError
from efficientrag.hub import hub_offline

PREFIX = "flashrank:"
CACHE_ENV = "EFFICIENTRAG_FLASHRANK_CACHE"
DEFAULT_CACHE = "~/.cache/efficientrag/flashrank"
# What FlashRank's loader reads besides the ONNX file (its tokenizer and padding settings).
TOKENIZER_FILES = ("tokenizer.json", "config.json", "tokenizer_config.json", "special_tokens_map.json")
INSTALL_HINT = "FlashRank rerankers need the flashrank extra: pip install 'efficientrag[flashrank]'"


def flashrank_model(model: str) -> str | None:
    """The FlashRank model a ``rerank`` model setting names (``flashrank:<name>``), else None."""
    return model[len(PREFIX) :] if model.startswith(PREFIX) else None


def flashrank_cache() -> Path:
    """Where FlashRank models are kept: ``$EFFICIENTRAG_FLASHRANK_CACHE`` or the default."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser()


def flashrank_folder(name: str) -> Path:
    """A FlashRank pairwise model's folder in the cache, downloaded by FlashRank when missing and the
    Hub is reachable; everything its loader reads is checked to be there.

    Args:
        name: The model's FlashRank name (``ms-marco-MiniLM-L-12-v2``).

    Returns:
        The folder.

    Raises:
        ImportError: flashrank is not installed.
        ValueError: FlashRank does not know ``name``, or it is a listwise LLM ranker.
        FileNotFoundError: The model is not in the cache and the Hub is offline, or a file is missing.
    """
    config = _flashrank_config()
    if name not in config.model_file_map:
        known = ", ".join(sorted(set(config.model_file_map) - set(config.listwise_rankers)))
        raise InvalidArgumentError(
            f"{PREFIX}{name}: FlashRank has no such model (its pairwise models: {known})"
        )
    if name in config.listwise_rankers:
        raise InvalidArgumentError(
            f"{PREFIX}{name} is a listwise LLM ranker: it orders passages without a score per pair; "
            "choose a pairwise FlashRank model"
        )
    cache = flashrank_cache()
    folder = cache / name
    if not folder.is_dir():
        if hub_offline():
            raise MissingFileError(
                f"{folder}: FlashRank model {name} is not in its cache and HF_HUB_OFFLINE is set; run once "
                f"where the Hub is reachable, or copy the model's folder there (${CACHE_ENV} moves the cache)"
            )
        _ranker(name, cache, max_length=512)  # FlashRank downloads the model into the cache
    needed = (config.model_file_map[name], *TOKENIZER_FILES)
    missing = [f for f in needed if not (folder / f).is_file()]
    if missing:
        raise MissingFileError(
            f"{folder}: not a complete FlashRank model folder (missing {', '.join(missing)})"
        )
    return folder


class FlashRankScorer:
    """Scores (question, chunk text) pairs with a FlashRank pairwise model: its probability that
    the chunk is relevant (sigmoid of a one-logit model, softmax of a two-logit one), as FlashRank
    returns it."""

    def __init__(self, name: str, *, max_length: int = 512) -> None:
        """Loads the model from the cache (downloading it where allowed).

        Args:
            name: The model's FlashRank name.
            max_length: Tokens per pair; longer pairs are cut.
        """
        folder = flashrank_folder(name)
        self.name = name
        self.folder = folder
        self.ranker = _ranker(name, folder.parent, max_length=max_length)

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """One score per pair, in the order of ``pairs``; consecutive pairs of one question go to
        FlashRank as one request.

        Args:
            pairs: ``(question, chunk text)`` pairs.

        Returns:
            The scores.
        """
        from flashrank.Ranker import RerankRequest

        scores = [0.0] * len(pairs)
        start = 0
        while start < len(pairs):
            question = pairs[start][0]
            end = start
            while end < len(pairs) and pairs[end][0] == question:
                end += 1
            passages = [{"id": i, "text": pairs[i][1]} for i in range(start, end)]
            for result in self.ranker.rerank(RerankRequest(query=question, passages=passages)):
                scores[result["id"]] = float(result["score"])
            start = end
        return scores


def _flashrank_config() -> Any:
    try:
        from flashrank import Config
    except ImportError as exc:
        raise MissingExtraError(INSTALL_HINT) from exc
    return Config


def _ranker(name: str, cache: Path, *, max_length: int) -> Any:
    """FlashRank's ``Ranker`` over ``cache``. Its constructor calls ``logging.basicConfig``, which
    would configure the caller's root logger: the root logger's handlers and level are put back."""
    try:
        from flashrank.Ranker import Ranker
    except ImportError as exc:
        raise MissingExtraError(INSTALL_HINT) from exc
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return Ranker(model_name=name, cache_dir=str(cache), max_length=max_length, log_level="WARNING")
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)
