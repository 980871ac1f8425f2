"""PEP 562 lazy exports for the package ``__init__`` modules, and the modules that moved away.

Names are imported on first use so that importing a package stays cheap (``import efficientrag``
does not import torch, FAISS or bm25s) and so that a submodule importing a sibling package's
errors does not become an import cycle.

A module that moved keeps no file at its old path: a package declares its moves with
:func:`moved_modules`, and importing an old path fails with one line naming the new one. A
one-line stub file per old path would do the same for a plain import, but anything that walks the
package's files (documentation builders, docstring and layer checks) would import or list the
stubs as modules; a finder leaves the folder holding only real modules.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    namespace: dict[str, Any],
    *,
    removed: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a name to its module; a loaded
    name is stored in ``namespace`` (the package's ``globals()``) so it is looked up only once.
    ``removed`` maps a name the package no longer has to what replaces it, which its error says."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            if removed and name in removed:
                raise AttributeError(f"{package}.{name} was removed: {removed[name]}")
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


def moved_modules(moves: Mapping[str, str]) -> None:
    """Make an import of each old module path in ``moves`` fail with an :class:`ImportError` whose
    one line names the new path (``"a.old moved to a.new; import from there"``).

    The finder goes last on ``sys.meta_path``, so it answers only an import no real module
    satisfied, and is installed once however often the calling package is (re)imported.

    Args:
        moves: old dotted module path -> the module that now holds its contents.
    """
    for finder in sys.meta_path:
        if isinstance(finder, _MovedModules):
            finder.moves.update(moves)
            return
    sys.meta_path.append(_MovedModules(moves))


class _MovedModules(importlib.abc.MetaPathFinder):
    """Answers the import of a moved module with an error instead of a spec."""

    def __init__(self, moves: Mapping[str, str]) -> None:
        self.moves = dict(moves)

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> None:
        new = self.moves.get(fullname)
        if new is None:
            return None
        # A plain ImportError, not ModuleNotFoundError: ``from package import old`` swallows the
        # latter (when its name is the module's) and reports "cannot import name" instead.
        raise ImportError(f"{fullname} moved to {new}; import from there", name=fullname)
