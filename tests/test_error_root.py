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
    from efficientrag.errors import MissingExtraError, MissingFileError, MissingKeyError, WrongTypeError

    pairs = [(MissingFileError, FileNotFoundError), (WrongTypeError, TypeError), (MissingKeyError, KeyError)]
    assert all(issubclass(ours, builtin) for ours, builtin in [*pairs, (MissingExtraError, ImportError)])
    try:
        raise ConfigError("x")
    except ValueError as e:
        assert isinstance(e, EfficientRAGError)


def _bare_raises(source: str) -> list[tuple[int, str]]:
    """(line, builtin) of each raise of a builtin exception itself in ``source``, but for an
    ``AttributeError`` in a module's ``__getattr__`` (the protocol ``hasattr`` relies on) and an
    ``AssertionError`` that marks a line no input reaches."""
    import ast
    import builtins

    tree = ast.parse(source)
    getattr_lines = {
        n.lineno
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
        for n in ast.walk(f)
        if isinstance(n, ast.Raise)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            called = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = called.id if isinstance(called, ast.Name) else ""
            builtin = getattr(builtins, name, None)
            if not (isinstance(builtin, type) and issubclass(builtin, BaseException)):
                continue
            if name == "AssertionError" or (name == "AttributeError" and node.lineno in getattr_lines):
                continue
            found.append((node.lineno, name))
    return found


def test_the_library_raises_no_bare_builtin_exception():
    """A raise of a builtin itself would escape ``except EfficientRAGError``: the library raises its
    own classes, each also the builtin (``InvalidArgumentError`` a ``ValueError``, ``WrongTypeError``
    a ``TypeError``, ``MissingFileError`` a ``FileNotFoundError``, ``SettingError`` for configs)."""
    from pathlib import Path

    root = Path(efficientrag.__file__).parent
    bare = []
    for path in sorted(root.rglob("*.py")):
        if "testing" in path.parts:
            continue
        bare += [
            f"{path.relative_to(root)}:{n} {name}"
            for n, name in _bare_raises(path.read_text(encoding="utf-8"))
        ]
    assert bare == []


def test_the_bare_raise_check_finds_them():
    source = (
        "def f(x):\n    raise TypeError('x')\n\ndef g():\n    raise KeyError\n\n"
        "def __getattr__(name):\n    raise AttributeError(name)\n\n"
        "def h():\n    raise AttributeError('h')\n    raise AssertionError('unreachable')\n    raise OwnError('x')\n"
    )
    assert _bare_raises(source) == [(2, "TypeError"), (5, "KeyError"), (11, "AttributeError")]


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
