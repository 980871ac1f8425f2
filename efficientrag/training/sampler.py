"""Seeded, length-grouped batches whose order depends only on (seed, epoch).

Because the order is a pure function of the seed and the epoch (no global RNG), a resumed run
rebuilds exactly the batches of the interrupted one and skips the ones already consumed.

Grouping: the epoch's shuffled indices are cut into mega-batches of ``batch_size * group_size``
rows, each sorted by length and cut into batches, and the batches are shuffled again, with the
longest batch moved first so an out-of-memory error shows up at step one, not hours in.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from efficientrag.errors import InvalidArgumentError


class LengthGroupedBatchSampler:
    def __init__(
        self,
        lengths: Sequence[int] | np.ndarray,
        batch_size: int,
        *,
        seed: int,
        shuffle: bool = True,
        group_by_length: bool = True,
        group_size: int = 50,
    ) -> None:
        if batch_size <= 0:
            raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size = batch_size
        self.drop_last = False
        self.seed = seed
        self.shuffle = shuffle
        self.group_by_length = group_by_length
        self.group_size = group_size
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size

    def batches(self) -> list[list[int]]:
        n = len(self.lengths)
        if not self.shuffle:
            order = np.argsort(-self.lengths, kind="stable") if self.group_by_length else np.arange(n)
            return [order[i : i + self.batch_size].tolist() for i in range(0, n, self.batch_size)]
        rng = np.random.default_rng([self.seed, self.epoch])
        order = rng.permutation(n)
        if not self.group_by_length:
            return [order[i : i + self.batch_size].tolist() for i in range(0, n, self.batch_size)]
        mega = self.batch_size * self.group_size
        batches: list[np.ndarray] = []
        for start in range(0, n, mega):
            group = order[start : start + mega]
            group = group[np.argsort(-self.lengths[group], kind="stable")]
            batches.extend(group[i : i + self.batch_size] for i in range(0, len(group), self.batch_size))
        # Re-pack so only the very last batch can be short (mega-batch tails would otherwise leave
        # several short batches).
        flat = np.concatenate(batches) if batches else np.empty(0, dtype=np.int64)
        batches = [flat[i : i + self.batch_size] for i in range(0, n, self.batch_size)]
        perm = rng.permutation(len(batches))
        batches = [batches[i] for i in perm]
        longest = int(np.argmax([self.lengths[b].max() for b in batches])) if batches else 0
        if batches:
            batches[0], batches[longest] = batches[longest], batches[0]
        return [b.tolist() for b in batches]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches())
