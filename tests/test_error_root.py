"""Every exception efficientrag defines has one root, ``EfficientRAGError``, and stays the builtin it
stands for, so ``except ValueError`` written against it keeps working."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import efficientrag
from efficientrag.errors import ConfigError, DataFormatError, EfficientRAGError
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


def test_the_library_raises_no_bare_value_or_runtime_error():
    """A raise of the builtin itself would escape ``except EfficientRAGError``: the library raises its
    own classes, each also the builtin (``InvalidArgumentError`` a ``ValueError``, ``OperationError``
    a ``RuntimeError``, ``SettingError`` for configs)."""
    import ast
    from pathlib import Path

    root = Path(efficientrag.__file__).parent
    bare = []
    for path in sorted(root.rglob("*.py")):
        if "testing" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                called = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(called, ast.Name) and called.id in ("ValueError", "RuntimeError"):
                    bare.append(f"{path.relative_to(root)}:{node.lineno}")
    assert bare == []


def test_public_entry_points_refuse_bad_input_within_the_family(tmp_path):
    from efficientrag import EfficientRAGConfig, RetrieverConfig
    from efficientrag.data import read_dataset
    from efficientrag.data.corpus import Corpus
    from efficientrag.errors import InvalidArgumentError
    from efficientrag.setting_fields import SettingError

    calls = [
        lambda: EfficientRAGConfig(rank_weight=-1.0),
        lambda: EfficientRAGConfig(budget_policy="rerank"),
        lambda: RetrieverConfig(kind="nope"),
        lambda: read_dataset("nope", "x.json"),
        lambda: read_dataset("hotpotqa", str(tmp_path / "missing.json")),
        lambda: Corpus.load(tmp_path / "none.jsonl"),
    ]
    for call in calls:
        try:
            call()
        except EfficientRAGError:
            continue
        except Exception as exc:  # pragma: no cover - the failure message names it
            raise AssertionError(f"{type(exc).__name__} outside the family: {exc}") from exc
        raise AssertionError("bad input was accepted")
    assert issubclass(InvalidArgumentError, ValueError) and issubclass(SettingError, ValueError)
