"""Config dataclasses to and from plain values: a mapping checked and converted into a typed
dataclass (:func:`from_dict`), a dataclass back to plain data for YAML, fingerprints and logs
(:func:`to_dict`, secrets left out), and what a class documents about its fields.

The conversion is the one place a value is checked against its field's type: every loader (YAML
presets, ``key=value`` overrides in :mod:`efficientrag.config`, a request's settings) goes through
it, so a wrong value fails the same way everywhere, naming the key and where it came from.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin

from efficientrag.errors import ConfigError, InvalidArgumentError
from efficientrag.setting_fields import SettingError, is_quiet_at_default

T = TypeVar("T")

# Field metadata of a setting that only switches a check off (see ``to_dict(checks=False)``).
CHECK_ONLY = "check_only"


def fingerprinted(cfg: Any) -> dict[str, Any]:
    """``to_dict(cfg)`` without the :func:`quiet_at_default` settings that hold their default.

    Args:
        cfg: A config dataclass.

    Returns:
        A new dict to fingerprint.
    """
    quiet = {f.name: f.default for f in dataclasses.fields(cfg) if is_quiet_at_default(f)}
    return {k: v for k, v in to_dict(cfg).items() if k not in quiet or quiet[k] != v}


def from_dict(cls: type[T], data: Mapping[str, Any], *, origin: str = "<dict>", prefix: str = "") -> T:
    """Recursively build a dataclass, checking keys and converting values to the field types."""
    if not dataclasses.is_dataclass(cls):
        raise InvalidArgumentError(f"{cls!r} is not a config dataclass: from_dict builds dataclasses only")
    if not isinstance(data, Mapping):
        raise ConfigError(f"{origin}: '{prefix or '<root>'}' must be a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    hints = typing.get_type_hints(cls)
    unknown = [k for k in data if k not in fields]
    if unknown:
        key = unknown[0]
        full = f"{prefix}{key}"
        close = difflib.get_close_matches(str(key), list(fields), n=1)
        hint = f"; did you mean '{prefix}{close[0]}'?" if close else ""
        known = ", ".join(sorted(fields))
        raise ConfigError(f"{origin}: unknown config key '{full}'{hint} (known keys here: {known})")
    kwargs = {
        name: _field_value(fields[name], hints[name], value, origin=origin, key=f"{prefix}{name}")
        for name, value in data.items()
    }
    try:
        return cls(**kwargs)
    except SettingError as exc:
        raise ConfigError(f"{origin}: {prefix}{exc}") from exc
    except (TypeError, ValueError) as exc:
        section = f"config section '{prefix.rstrip('.')}'" if prefix else f"config ({cls.__name__})"
        raise ConfigError(f"{origin}: invalid {section}: {exc}") from exc


def config_section(cls: type, name: str, merged: Mapping[str, Any], *, origin: str = "<dict>") -> Any:
    """One field of ``cls`` built from plain data (:func:`merged_sources`) as :func:`from_dict`
    builds it, without building the rest: a command that must read one section to decide the
    others' overrides builds the whole config once, afterwards.

    Args:
        cls: The config dataclass.
        name: The field (a nested config section such as ``data``).
        merged: Plain data for the whole of ``cls``.
        origin: Where ``merged`` came from, for errors.

    Returns:
        The field's value: its default when ``merged`` does not name it.
    """
    field = {f.name: f for f in dataclasses.fields(cls) if f.init}[name]
    if name not in merged:
        return _field_default(field)
    return _field_value(field, typing.get_type_hints(cls)[name], merged[name], origin=origin, key=name)


def attribute_docs(cls: type) -> dict[str, str]:
    """Each attribute's description in a class docstring's ``Attributes:`` section, one line each
    (what a schema derived from the class shows beside its fields).

    Args:
        cls: A class whose docstring lists ``name: text`` under ``Attributes:``.
    """
    doc = inspect.getdoc(cls) or ""
    if "Attributes:" not in doc:
        return {}
    out: dict[str, str] = {}
    name = None
    for line in doc.split("Attributes:", 1)[1].splitlines()[1:]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        head = re.match(r"(\w+): (.*)", line.strip())
        if indent <= 4 and head:
            name = head[1]
            out[name] = head[2]
        elif indent > 4 and name:
            out[name] += " " + line.strip()
        else:
            break
    return out


def to_dict(cfg: Any, *, checks: bool = True) -> dict[str, Any]:
    """Plain-data view of a config (for saving next to outputs, and for hashing). Fields marked
    ``metadata={"secret": True}`` (API keys) are left out, so saved configs never hold secrets.

    ``checks=False`` also leaves out fields marked ``metadata={CHECK_ONLY: True}``: switches of a
    check that refuses bad input but never changes a result. Fingerprints of runs and stage folders
    are taken that way, so adding such a switch keeps every earlier folder resumable."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return {
            f.name: to_dict(getattr(cfg, f.name), checks=checks)
            for f in dataclasses.fields(cfg)
            if not f.metadata.get("secret") and (checks or not f.metadata.get(CHECK_ONLY))
        }
    if isinstance(cfg, (list, tuple)):
        return [to_dict(x, checks=checks) for x in cfg]
    if isinstance(cfg, dict):
        return {k: to_dict(v, checks=checks) for k, v in cfg.items()}
    if isinstance(cfg, Path):
        return str(cfg)
    return cfg


def same_named(source: Any, names: Sequence[str]) -> dict[str, Any]:
    """``{name: source.<name>}`` for each of ``names``: settings handed on under the names they
    already have (a config's fields to the class it configures, parsed flags to a server's config).

    Args:
        source: the object holding the settings (a config dataclass, an ``argparse.Namespace``).
        names: the attributes to hand on.

    Returns:
        Keyword arguments for the receiver.
    """
    return {name: getattr(source, name) for name in names}


def _field_value(f: dataclasses.Field, hint: Any, value: Any, *, origin: str, key: str) -> Any:
    """``value`` converted to field ``f``'s type. A partial mapping for a nested config extends that
    field's own default (a factory may differ from the nested class's defaults: the quickstart's
    Labeler recipe), not the class's."""
    default = _field_default(f)
    if isinstance(value, Mapping) and dataclasses.is_dataclass(default) and not isinstance(default, type):
        value = deep_merge(_plain(default), value)
    return _convert(value, hint, origin=origin, key=key)


def _field_default(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None if f.default is dataclasses.MISSING else f.default


def _plain(cfg: Any) -> dict[str, Any]:
    """Every init field of a config as plain data (unlike ``to_dict``, secrets included: this is a
    default being extended, never written anywhere)."""
    return {
        f.name: (_plain(v) if dataclasses.is_dataclass(v := getattr(cfg, f.name)) else v)
        for f in dataclasses.fields(cfg)
        if f.init
    }


def deep_merge(a: dict[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _convert(value: Any, tp: Any, *, origin: str, key: str) -> Any:
    origin_tp = get_origin(tp)
    if tp is Any:
        return value
    if origin_tp in (Union, types.UnionType):
        args = get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise ConfigError(f"{origin}: '{key}' may not be null")
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _convert(value, arg, origin=origin, key=key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(
            errors[0] if len(errors) == 1 else f"{origin}: '{key}': {value!r} fits none of {tp}"
        )
    if origin_tp is typing.Literal:
        allowed = get_args(tp)
        if value not in allowed:
            raise ConfigError(f"{origin}: '{key}' must be one of {list(allowed)}, got {value!r}")
        return value
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        return from_dict(tp, value if value is not None else {}, origin=origin, prefix=f"{key}.")
    if origin_tp in (list, Sequence, tuple) or tp in (list, tuple):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            value = [value]
        args = get_args(tp)
        item_tp = args[0] if args else Any
        items = [_convert(v, item_tp, origin=origin, key=f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if (origin_tp is tuple or tp is tuple) else items
    if origin_tp in (dict, Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{origin}: '{key}' must be a mapping, got {value!r}")
        args = get_args(tp)
        val_tp = args[1] if len(args) == 2 else Any
        return {str(k): _convert(v, val_tp, origin=origin, key=f"{key}.{k}") for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"true", "yes", "1", "on", "false", "no", "0", "off"}:
            return value.lower() in {"true", "yes", "1", "on"}
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise ConfigError(f"{origin}: '{key}' must be true/false, got {value!r}")
    if tp is int:
        if isinstance(value, bool):
            raise ConfigError(f"{origin}: '{key}' must be an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.replace("_", ""))
            except ValueError:
                pass
        raise ConfigError(f"{origin}: '{key}' must be an integer, got {value!r}")
    if tp is float:
        if isinstance(value, bool):
            raise ConfigError(f"{origin}: '{key}' must be a number, got {value!r}")
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{origin}: '{key}' must be a number, got {value!r}")
    if tp is str:
        if isinstance(value, (dict, list)):
            raise ConfigError(f"{origin}: '{key}' must be a string, got {value!r}")
        return str(value)
    if tp is Path:
        return Path(str(value))
    return value
