"""Memoized Labeler/Filter predictions, keyed by the exact input words.

A model's prediction depends only on its input words (and the input length), so an evaluation
that runs the loop under several settings (a threshold or top-k grid on validation questions)
sees the same (question, chunk) pairs again and again: the question's own top-k at hop 0, and
every next-hop query the settings have in common. Wrapping the models in this cache makes a grid
cost about one run plus what the settings do differently, with the same results up to float
noise: a cached prediction was computed in another batch, whose shape changes the kernels'
rounding, so its probabilities may differ from an uncached call's in the last float32 digits.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from efficientrag.errors import InvalidArgumentError


class CachedPredictor:
    """Wraps a Labeler or Filter (anything with ``predict(items, **kw)``); same interface."""

    def __init__(self, model: Any, max_items: int = 500_000) -> None:
        if max_items < 1:
            raise InvalidArgumentError(f"max_items must be >= 1, got {max_items}")
        self.model = model
        self.max_items = max_items
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[tuple, Any] = OrderedDict()

    def predict(self, items: Sequence[Any], **kw: Any) -> list[Any]:
        setting = tuple(sorted((k, v) for k, v in kw.items() if k not in ("batch_size", "show_progress")))
        keys = [(_freeze(item), setting) for item in items]
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            first = {k: i for i, k in reversed(list(enumerate(keys)))}
            predicted = self.model.predict([items[first[k]] for k in missing], **kw)
            for key, pred in zip(missing, predicted, strict=True):
                self._cache[key] = pred
            while len(self._cache) > self.max_items:
                self._cache.popitem(last=False)
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        out = []
        for key in keys:
            self._cache.move_to_end(key)
            out.append(self._cache[key])
        return out

    def __getattr__(self, name: str) -> Any:
        # Everything else (spec, max_length, tokenizer ...) is the wrapped model's.
        return getattr(self.model, name)


def _freeze(item: Any) -> tuple:
    if isinstance(item, (list, tuple)) and item and isinstance(item[0], (list, tuple)):
        return tuple(tuple(part) for part in item)  # a Labeler pair (query words, chunk words)
    return tuple(item)  # a Filter word list
