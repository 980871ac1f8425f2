"""What a config field declares beside its default, and the one check of it: its range or choices,
whether it is quiet at its default in fingerprints, and its roles (exposed over HTTP, replayable,
answer-only, reset for the reranker).

Config dataclasses in every layer declare their settings with these helpers and call
:func:`check_settings` from ``__post_init__``, so a range is written once, at the field, and every
list of the settings that play a role is read back from the fields (:func:`settings_with`). The
loader (:mod:`efficientrag.config`) puts the section in front of a :class:`SettingError`'s message.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Iterable, Sequence
from typing import Any, Union, get_args, get_origin

from efficientrag.errors import EfficientRAGError, InvalidArgumentError


class SettingError(EfficientRAGError, ValueError):
    """A config field's value is out of its range, or fields that do not go together. The message
    starts with a field's name; the loader puts the section in front (``efficientrag.tag_threshold=2:
    ...``). ``fields`` names the settings the refusal is about, so a caller can point at them (the
    server names the request's setting) without reading the message.

    Args:
        message: What is wrong, starting with a field's name.
        fields: The settings involved, the first the one the message starts with.
    """

    def __init__(self, message: str, *, fields: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.fields = tuple(fields)


_RANGE = "range"
_PROBABILITY = "probability"
_QUIET_AT_DEFAULT = "quiet_at_default"
_ROLES = "roles"

# A setting's roles, declared on its field (``roles=`` of the helpers below) and read back by
# :func:`settings_with`, so that no list elsewhere names the settings that play one.
EXPOSED_OVER_HTTP = "exposed_over_http"  # a request to the server may set it for itself
REPLAYABLE = "replayable"  # a replay of a run's traces may change it (the hops stay the same)
ANSWER_ONLY = "answer_only"  # it decides only the answer call, not what is retrieved
RESET_FOR_RERANKER = "reset_for_reranker"  # the reranker derived from a loop sets it to its default
SPEED_ONLY = "speed_only"  # it changes how fast a run goes, never what it returns: left out of fingerprints
ROLES = frozenset({EXPOSED_OVER_HTTP, REPLAYABLE, ANSWER_ONLY, RESET_FOR_RERANKER, SPEED_ONLY})


def setting(
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Any = dataclasses.MISSING,
    roles: Iterable[str] = (),
) -> Any:
    """A dataclass field whose roles sit beside its default (:func:`settings_with` reads them); for
    a setting with no range. The range helpers below take ``roles`` too.

    Args:
        default: The default value.
        default_factory: Makes the default instead (a dict or a list), as ``dataclasses.field``'s.
        roles: Some of :data:`ROLES`.
    """
    return dataclasses.field(
        default=default, default_factory=default_factory, metadata=_roles_metadata(roles)
    )


def bounded(
    default: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
    below: float | None = None,
    roles: Iterable[str] = (),
) -> Any:
    """A dataclass field for a number whose range sits beside its default: unless None, it must lie
    in [low, high], above ``above`` and below ``below`` (None: no limit there). The class's
    ``__post_init__`` calls :func:`check_settings`, so a bad value fails when the config is built,
    from YAML or in Python, and the message names the field. A subclass that only changes the
    default keeps the range its base declared. ``roles``: as :func:`setting` takes them."""
    metadata = {_RANGE: (low, high, above, below), **_roles_metadata(roles)}
    return dataclasses.field(default=default, metadata=metadata)


def probability(default: float, *, roles: Iterable[str] = ()) -> Any:
    """A dataclass field holding a probability (a threshold on one, or a fraction of rows), checked
    by :func:`check_settings` to lie in [0, 1]: a threshold of 2 would fail nowhere else, it would
    just keep nothing. ``roles``: as :func:`setting` takes them."""
    metadata = {_PROBABILITY: True, _RANGE: (0.0, 1.0, None, None), **_roles_metadata(roles)}
    return dataclasses.field(default=default, metadata=metadata)


def quiet_at_default(default: Any, *, roles: Iterable[str] = (), **bounds: float | None) -> Any:
    """A dataclass field for a setting added after runs were fingerprinted: its default behaves as
    before the setting existed, and :func:`fingerprinted` leaves it out there, so those runs keep
    their fingerprints. Declared on the field itself, a new setting needs no second list.
    ``bounds`` (``low``, ``high``, ``above``, ``below``) declare its range as :func:`bounded` does:
    checked, and shown in schemas, like a bounded field's. ``roles``: as :func:`setting` takes them."""
    declared = bounded(default, roles=roles, **bounds) if bounds else setting(default, roles=roles)
    return dataclasses.field(default=default, metadata={**declared.metadata, _QUIET_AT_DEFAULT: True})


def _roles_metadata(roles: Iterable[str]) -> dict[str, frozenset[str]]:
    chosen = frozenset(roles)
    unknown = sorted(chosen - ROLES)
    if unknown:
        raise InvalidArgumentError(f"unknown setting role(s) {unknown}; known: {sorted(ROLES)}")
    return {_ROLES: chosen} if chosen else {}


@functools.cache
def settings_with(cls: type, role: str) -> tuple[str, ...]:
    """The fields of config class ``cls`` that declare ``role``, in declaration order.

    Args:
        cls: A config dataclass.
        role: One of :data:`ROLES`.
    """
    if role not in ROLES:
        raise InvalidArgumentError(f"unknown setting role {role!r}; known: {sorted(ROLES)}")
    return tuple(f.name for f in dataclasses.fields(cls) if role in (_declared(cls, f.name, _ROLES) or ()))


def settings_in_tree(root: type, role: str) -> frozenset[str]:
    """The names of the settings that declare ``role`` in config class ``root`` and every config
    dataclass its fields hold, however deep (through ``X | None`` and containers).

    Args:
        root: A config dataclass (``ExperimentConfig``: everything a run reads).
        role: One of :data:`ROLES`.
    """
    names: set[str] = set()
    for cls in config_classes(root):
        names.update(settings_with(cls, role))
    return frozenset(names)


def config_classes(root: type) -> list[type]:
    """``root`` and every config dataclass reachable through its fields' types, each once.

    Args:
        root: A config dataclass.
    """
    found: list[type] = []

    def visit(tp: Any) -> None:
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            if tp in found:
                return
            found.append(tp)
            for hint in typing.get_type_hints(tp).values():
                visit(hint)
        for arg in typing.get_args(tp):
            visit(arg)

    visit(root)
    return found


def check_settings(cfg: Any) -> None:
    """Check every field of ``cfg`` against what its declaration allows: a ``Literal`` type's
    choices, a :func:`bounded` range, a :func:`probability`. One check for every config class, so
    a range is written once, at the field.

    Args:
        cfg: A config dataclass (its ``__post_init__`` calls this).

    Raises:
        SettingError: The first field out of its range or choices; the message starts with its name.
    """
    for name, choices, is_probability, limits in _declarations(type(cfg)):
        value = getattr(cfg, name)
        if choices and value not in choices:
            raise SettingError(f"{name} must be one of {list(choices)}, got {value!r}", fields=(name,))
        if value is None:
            continue
        if is_probability:
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not 0.0 <= value <= 1.0:
                shown = f"{value:g}" if number else repr(value)
                raise SettingError(f"{name}={shown}: a probability, must be in [0, 1]", fields=(name,))
        low, high, above, below = limits
        if low is not None and high is not None and not low <= value <= high:
            raise SettingError(f"{name} must lie in [{low:g}, {high:g}], got {value}", fields=(name,))
        if low is not None and value < low:
            raise SettingError(f"{name} must be >= {low:g}, got {value}", fields=(name,))
        if high is not None and value > high:
            raise SettingError(f"{name} must be <= {high:g}, got {value}", fields=(name,))
        if above is not None and value <= above:
            raise SettingError(f"{name} must be > {above:g}, got {value}", fields=(name,))
        if below is not None and value >= below:
            raise SettingError(f"{name} must be < {below:g}, got {value}", fields=(name,))


_NO_LIMITS = (None, None, None, None)


@functools.cache
def _declarations(cls: type) -> tuple[tuple[str, tuple[Any, ...], bool, tuple[Any, ...]], ...]:
    """What :func:`check_settings` checks of ``cls``, read once per class (type hints are slow to
    resolve, and configs are built per request): each field that declares choices, a probability or
    a range, as ``(name, choices, is_probability, (low, high, above, below))``. A field's metadata
    is taken from the nearest class in the MRO that declared it, so a subclass that only changes a
    default keeps its base's range."""
    hints = typing.get_type_hints(cls)
    checked = []
    for f in dataclasses.fields(cls):
        choices = _literal_choices(hints.get(f.name))
        is_probability = bool(_declared(cls, f.name, _PROBABILITY))
        limits = _declared(cls, f.name, _RANGE) or _NO_LIMITS
        if choices or is_probability or limits != _NO_LIMITS:
            checked.append((f.name, choices, is_probability, limits))
    return tuple(checked)


def _literal_choices(tp: Any) -> tuple[Any, ...]:
    """The values a ``Literal`` type allows, None included for an optional one (``Literal[...] |
    None``); empty for any other type."""
    if get_origin(tp) is typing.Literal:
        return get_args(tp)
    if get_origin(tp) in (Union, types.UnionType):
        members = get_args(tp)
        literals = [c for m in members if get_origin(m) is typing.Literal for c in get_args(m)]
        if literals and all(get_origin(m) is typing.Literal or m is type(None) for m in members):
            return (*literals, None) if type(None) in members else tuple(literals)
    return ()


def schema_bounds(cls: type, name: str) -> dict[str, float]:
    """Field ``name``'s declared range as JSON Schema keywords (``minimum``, ``maximum``,
    ``exclusiveMinimum``, ``exclusiveMaximum``), so that a schema derived from the class shows the
    range the config checks, without checking it a second time.

    Args:
        cls: A config dataclass.
        name: One of its fields.

    Returns:
        The keywords of the bounds it declares (empty: none).
    """
    low, high, above, below = _declared(cls, name, _RANGE) or _NO_LIMITS
    keywords = {"minimum": low, "maximum": high, "exclusiveMinimum": above, "exclusiveMaximum": below}
    return {k: v for k, v in keywords.items() if v is not None}


def _declared(cls: type, name: str, key: str) -> Any:
    """Field ``name``'s metadata ``key`` as the nearest class in the MRO that declared one gave it."""
    for klass in cls.__mro__:
        declared = getattr(klass, "__dataclass_fields__", {}).get(name)
        if declared is not None and key in declared.metadata:
            return declared.metadata[key]
    return None


def is_quiet_at_default(f: dataclasses.Field) -> bool:
    """Whether ``f`` was declared with :func:`quiet_at_default` (fingerprints leave it out at its
    default)."""
    return bool(f.metadata.get(_QUIET_AT_DEFAULT))
