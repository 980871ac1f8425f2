"""PEP 562 lazy exports for the package ``__init__`` modules.

Names are imported on first use so that importing a package stays cheap (``import efficientrag``
does not import torch, FAISS or bm25s) and so that a submodule importing a sibling package's
errors does not become an import cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a name to its module; a loaded
    name is stored in ``namespace`` (the package's ``globals()``) so it is looked up only once."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__


def by_module(package: str, modules: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The ``exports`` of :func:`lazy_exports` written as imports are: each submodule of
    ``package`` (dotted, relative to it) once, with the names it gives.

    Args:
        package: the package's ``__name__``.
        modules: submodule -> the names to export from it.

    Returns:
        name -> full module name.
    """
    return {name: f"{package}.{module}" for module, names in modules.items() for name in names}
