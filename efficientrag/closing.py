"""``with`` support for the objects that hold a resource (a file, a database, a client, an event
loop thread) and release it in ``close()``, written once instead of in each of them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TypeVar

C = TypeVar("C", bound="Closing")


class Closing(ABC):
    """A base class: ``with obj:`` gives ``obj`` itself and calls its ``close()`` on the way out,
    also when the block raises. A subclass implements :meth:`close`."""

    @abstractmethod
    def close(self) -> None:
        """Release what the object holds."""

    def __enter__(self: C) -> C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
