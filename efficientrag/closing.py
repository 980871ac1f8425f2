"""``with`` support for the objects that hold a resource (a file, a database, a client, an event
loop thread) and release it in ``close()``, written once instead of in each of them."""

from __future__ import annotations

from typing import TypeVar

C = TypeVar("C", bound="Closing")


class Closing:
    """A base class: ``with obj:`` gives ``obj`` itself and calls its ``close()`` on the way out,
    also when the block raises. A subclass implements :meth:`close`."""

    def close(self) -> None:
        """Release what the object holds."""
        raise NotImplementedError

    def __enter__(self: C) -> C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
