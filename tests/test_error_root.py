"""Every exception efficientrag defines has one root, ``EfficientRAGError``, and stays the builtin it
stands for, so ``except ValueError`` written against it keeps working."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import efficientrag
from efficientrag.config import ConfigError
from efficientrag.errors import DataFormatError, EfficientRAGError
from efficientrag.eval.interrupts import RunInterrupted
from efficientrag.retrieval.errors import IndexNotFoundError

# Control flow, like KeyboardInterrupt: a broad ``except Exception`` must not swallow it.
OUTSIDE = {RunInterrupted}


def _exception_classes() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(efficientrag.__path__, "efficientrag."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
        found += [
            obj
            for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__
        ]
    return found


def test_every_exception_class_has_the_one_root():
    classes = _exception_classes()
    assert len(classes) > 30
    strays = sorted(
        c.__qualname__ for c in classes if not issubclass(c, EfficientRAGError) and c not in OUTSIDE
    )
    assert strays == []
    assert not issubclass(RunInterrupted, Exception)


def test_each_keeps_the_builtin_it_stands_for():
    assert issubclass(ConfigError, ValueError) and issubclass(DataFormatError, ValueError)
    assert issubclass(IndexNotFoundError, FileNotFoundError)
    try:
        raise ConfigError("x")
    except ValueError as e:
        assert isinstance(e, EfficientRAGError)
