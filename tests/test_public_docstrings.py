"""The public API documents itself: every exported function, class and public method has a Google
style docstring whose ``Args:`` names each parameter and whose ``Returns:`` says what comes back.

"Exported" means a name in the ``__all__`` of ``efficientrag`` or of one of its subpackages
(``efficientrag/*/__init__.py``; lazy exports are resolved), plus the CLI's ``cmd_*`` command
functions. A class counts its constructor parameters (documented under ``Args:`` on the class or on
``__init__``; a dataclass's fields under ``Attributes:``) and every public method or property that
a class of this package defines along its MRO. A name whose optional extra is not installed is
skipped, with the missing module as the reason.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from typing import Any

import pytest

import efficientrag

_RETURN_SECTIONS = ("Returns:", "Yields:")
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*)\s*(\([^)]*\))?\s*:")


def _packages() -> list[str]:
    """``efficientrag`` and its first-level subpackages that declare ``__all__``."""
    names = ["efficientrag"]
    for info in pkgutil.iter_modules(efficientrag.__path__):
        if info.ispkg:
            names.append(f"efficientrag.{info.name}")
    return names


def _exports() -> list[tuple[str, str]]:
    """``(package, name)`` for every name in those packages' ``__all__`` (``__version__`` left out)."""
    pairs = []
    for package in _packages():
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            if not name.startswith("__"):
                pairs.append((package, name))
    return pairs


def _cli_commands() -> list[tuple[str, str]]:
    """The ``cmd_*`` functions of the CLI's command modules, as (module, name)."""
    cli = importlib.import_module("efficientrag.cli")
    found = []
    for info in pkgutil.iter_modules(cli.__path__, "efficientrag.cli."):
        module = importlib.import_module(info.name)
        found += [
            (info.name, name)
            for name, value in vars(module).items()
            if name.startswith("cmd_") and callable(value) and value.__module__ == info.name
        ]
    return sorted(found)


def section_entries(doc: str, headers: tuple[str, ...]) -> set[str] | None:
    """The names listed under any of ``headers`` in ``doc`` (stars stripped); None when no header
    is present. An entry is a line one indentation step below its header, ``name (type): text``."""
    lines = inspect.cleandoc(doc).splitlines()
    found: set[str] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() in headers:
            header_indent = len(line) - len(line.lstrip())
            found = found if found is not None else set()
            entry_indent = None
            i += 1
            while i < len(lines):
                body = lines[i]
                if not body.strip():
                    i += 1
                    continue
                indent = len(body) - len(body.lstrip())
                if indent <= header_indent:
                    break
                if entry_indent is None:
                    entry_indent = indent
                if indent == entry_indent:
                    match = _ENTRY.match(body.strip())
                    if match:
                        found.add(match.group(1).lstrip("*"))
                i += 1
            continue
        i += 1
    return found


def has_section(doc: str, headers: tuple[str, ...]) -> bool:
    """Whether ``doc`` has a line that is one of ``headers`` (``Returns:``)."""
    return any(line.strip() in headers for line in inspect.cleandoc(doc).splitlines())


def _parameters(func: Any, *, bound: bool) -> list[str]:
    """Parameter names a caller passes (``self``/``cls`` left out for methods)."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    names = [p.name for p in signature.parameters.values()]
    if bound and names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


def _returns_something(func: Any) -> bool:
    try:
        annotation = inspect.signature(func).return_annotation
    except (TypeError, ValueError):
        return False
    if annotation is inspect.Signature.empty:
        return False
    return annotation not in (None, "None", type(None))


def check_callable(label: str, func: Any, *, bound: bool = False) -> list[str]:
    """Problems with one function or method's docstring (empty when none)."""
    doc = inspect.getdoc(func)
    if not doc:
        return [f"{label}: no docstring"]
    problems = []
    params = _parameters(func, bound=bound)
    if params:
        named = section_entries(doc, ("Args:",)) or set()
        missing = [p for p in params if p not in named]
        if missing:
            problems.append(f"{label}: Args: does not name {', '.join(missing)}")
    if _returns_something(func) and not has_section(doc, _RETURN_SECTIONS):
        problems.append(f"{label}: returns a value but has no Returns: section")
    return problems


def _ours(cls: type) -> list[type]:
    """``cls`` and the classes of this package along its MRO (not ``transformers``' or the stdlib's)."""
    return [klass for klass in cls.__mro__ if klass is cls or klass.__module__.startswith("efficientrag")]


def _own_init(cls: type) -> Any | None:
    """The ``__init__`` written in this package for ``cls`` (or a base of it here), if any."""
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            return vars(klass)["__init__"] if klass in _ours(cls) else None
    return None


def _constructor_parameters(cls: type) -> list[str]:
    """What a caller passes to build ``cls``: a dataclass's fields declared by classes of this package
    (not those a ``transformers`` config base declares), the parameters of an ``__init__`` written
    here, or nothing (a protocol, or a class that keeps its base's constructor)."""
    if getattr(cls, "_is_protocol", False):
        return []
    if dataclasses.is_dataclass(cls):
        own = {name for klass in _ours(cls) for name in inspect.get_annotations(klass)}
        return [field.name for field in dataclasses.fields(cls) if field.init and field.name in own]
    init = _own_init(cls)
    return _parameters(init, bound=True) if init is not None else []


def _project_members(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods and properties defined by ``cls`` or its bases in this package."""
    # A dataclass field's default may be a function (a key function); it is a field, not a method.
    seen: set[str] = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    for klass in _ours(cls):
        for name in vars(klass):
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            # The class's own attribute wins (an override inherits its base's docstring).
            yield name, inspect.getattr_static(cls, name)


def check_class(label: str, cls: type) -> list[str]:
    """Problems with a class's docstring, its constructor's documentation and its public members."""
    problems = []
    # A dataclass without a docstring gets its signature as ``__doc__``; that does not count.
    own = cls.__doc__ if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}(") else None
    doc = inspect.cleandoc(own) if own else ""
    if not doc:
        problems.append(f"{label}: no class docstring")
    params = _constructor_parameters(cls)
    if params:
        init = _own_init(cls)
        # One convention each: a dataclass describes its fields under ``Attributes:``, any other
        # class its constructor's parameters under ``Args:`` (on the class or on ``__init__``).
        # A subclass that adds nothing may leave them to the base of this package that declares them.
        header = "Attributes:" if dataclasses.is_dataclass(cls) else "Args:"
        named = set()
        for klass in _ours(cls):
            if klass.__doc__:
                named |= section_entries(klass.__doc__, (header,)) or set()
        if init is not None and init.__doc__:
            named |= section_entries(init.__doc__, ("Args:",)) or set()
        missing = [p for p in params if p not in named]
        if missing:
            problems.append(f"{label}: {header} does not name {', '.join(missing)}")
    for name, member in _project_members(cls):
        where = f"{label}.{name}"
        if isinstance(member, property | functools.cached_property):
            getter = member.fget if isinstance(member, property) else member.func
            if not (getter and getter.__doc__):
                problems.append(f"{where}: property has no docstring")
        elif isinstance(member, staticmethod):
            problems += check_callable(where, member.__func__)
        elif isinstance(member, classmethod):
            problems += check_callable(where, member.__func__, bound=True)
        elif inspect.isfunction(member):
            problems += check_callable(where, getattr(cls, name), bound=True)
    return problems


def check_object(label: str, obj: Any) -> list[str]:
    """Problems with one exported object (constants are not checked)."""
    if inspect.isclass(obj):
        return check_class(label, obj)
    if callable(obj):
        return check_callable(label, obj)
    return []  # constants (KINDS, PROMPT_VERSION) document themselves where they are defined


def _resolve(package: str, name: str) -> Any:
    """The exported object; a skip when importing it needs an optional extra that is missing (a
    missing module of this package is a broken export table, and fails)."""
    try:
        return getattr(importlib.import_module(package), name)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] == "efficientrag":
            raise
        pytest.skip(
            f"{package}.{name} needs an optional extra that is not installed (no module {error.name!r})"
        )


@pytest.mark.parametrize(("package", "name"), _exports(), ids=lambda value: value)
def test_exported_name_is_documented(package, name):
    problems = check_object(f"{package}.{name}", _resolve(package, name))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("module", "name"), _cli_commands())
def test_cli_command_is_documented(module, name):
    problems = check_callable(f"{module}.{name}", getattr(importlib.import_module(module), name))
    assert not problems, "\n".join(problems)


def test_the_checker_catches_what_it_is_meant_to():
    def undocumented(a):
        return a

    def missing_arg(a: int, b: int) -> int:
        """Adds.

        Args:
            a: One.

        Returns:
            The sum.
        """
        return a + b

    def missing_returns(a: int) -> int:
        """Identity.

        Args:
            a: The value.
        """
        return a

    def complete(a: int, *rest: int, key: str = "", **extra: Any) -> int:
        """Complete.

        Args:
            a (int): The value.
            *rest: More values.
            key: A key.
            **extra: Anything else.

        Returns:
            ``a``.
        """
        return a

    assert check_callable("undocumented", undocumented) == ["undocumented: no docstring"]
    assert check_callable("missing_arg", missing_arg) == ["missing_arg: Args: does not name b"]
    assert check_callable("missing_returns", missing_returns) == [
        "missing_returns: returns a value but has no Returns: section"
    ]
    assert check_callable("complete", complete) == []

    @dataclasses.dataclass
    class Settings:
        """Settings.

        Attributes:
            top_k: How many.
        """

        top_k: int = 1
        max_hops: int = 2

    assert check_class("Settings", Settings) == ["Settings: Attributes: does not name max_hops"]

    class Store:
        def __init__(self, path: str, *, size: int = 1) -> None:
            """Open it.

            Args:
                path: Where.
            """

        @property
        def rows(self) -> int:
            return 0

        def get(self, key: str) -> str:
            """One value.

            Args:
                key: Its key.

            Returns:
                The value.
            """
            return key

    assert check_class("Store", Store) == [
        "Store: no class docstring",
        "Store: Args: does not name size",
        "Store.rows: property has no docstring",
    ]


def test_there_is_something_to_check():
    assert len(_exports()) > 100 and len(_cli_commands()) >= 9
