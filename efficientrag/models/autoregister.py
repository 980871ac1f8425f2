"""Registers the Labeler/Filter classes with ``transformers``' Auto classes, without importing torch.

``AutoModel.from_pretrained(folder)`` on a saved Labeler/Filter needs ``AutoConfig`` and ``AutoModel``
to know our model types, and registration must happen in-process (``trust_remote_code`` stays off).
Importing ``transformers``' Auto classes imports torch, which ``import efficientrag`` must not do
(it stays cheap for the synthesis and evaluation tools). So :func:`install` registers at once when
those modules are already loaded, and otherwise adds an import hook that registers right after
``transformers`` loads them: whatever the import order, ``import efficientrag`` is enough.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import warnings
from types import ModuleType
from typing import Any

# transformers module -> our module that registers with it (each of ours registers on import).
TRIGGERS = {
    "transformers.models.auto.configuration_auto": "efficientrag.models.configuration",
    "transformers.models.auto.modeling_auto": "efficientrag.models.modeling",
}

_lock = threading.Lock()


def install() -> None:
    """Register now for the Auto modules already imported; hook the import of the others."""
    pending = {name: ours for name, ours in TRIGGERS.items() if name not in sys.modules}
    for name, ours in TRIGGERS.items():
        if name not in pending:
            _register(ours)
    if pending and not any(isinstance(f, _AutoClassHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _AutoClassHook(pending))


def _register(ours: str) -> None:
    """Import our module (it registers itself at its end); a module being imported right now is left
    to finish, since registering from inside its own import would see it half-built."""
    if ours in sys.modules:
        return
    try:
        importlib.import_module(ours)
    except Exception as err:  # a broken registration must not break importing transformers
        warnings.warn(
            f"efficientrag could not register its models with transformers' Auto classes ({err}); "
            "import efficientrag.models.modeling before AutoModel.from_pretrained",
            RuntimeWarning,
            stacklevel=2,
        )


class _AutoClassHook(importlib.abc.MetaPathFinder):
    """Finds the trigger modules with the other finders and wraps their loader."""

    def __init__(self, pending: dict[str, str]) -> None:
        self.pending = dict(pending)

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> Any:
        if fullname not in self.pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None:
            return spec
        spec.loader = _RegisteringLoader(spec.loader, self._done(fullname))
        return spec

    def _done(self, fullname: str) -> str:
        with _lock:
            ours = self.pending.pop(fullname)
            if not self.pending and self in sys.meta_path:
                sys.meta_path.remove(self)
        return ours


class _RegisteringLoader(importlib.abc.Loader):
    """Runs the real loader, then registers; anything else (source, resources) goes to the real one."""

    def __init__(self, loader: Any, ours: str) -> None:
        self._loader = loader
        self._ours = ours

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _register(self._ours)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
