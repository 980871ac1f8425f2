"""The one config loader: typed dataclasses from YAML presets plus ``key=value`` overrides.

Every entry point (CLI, ``train/*.py``, ``synth/run.py``, benchmarks) goes through
:func:`load_config`, so a preset that works in one place works everywhere, and a typo in a
key fails the same way everywhere: early, naming the key and the file it came from.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import inspect
import re
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin

import yaml

from efficientrag.atomic import write_text_atomic
from efficientrag.errors import EfficientRAGError
from efficientrag.setting_fields import SettingError, is_quiet_at_default

T = TypeVar("T")

BASE_KEY = "_base_"
# Field metadata of a setting that only switches a check off (see ``to_dict(checks=False)``).
CHECK_ONLY = "check_only"


class ConfigError(EfficientRAGError, ValueError):
    """A config value or key is wrong; the message names the key and where it came from."""


def fingerprinted(cfg: Any) -> dict[str, Any]:
    """``to_dict(cfg)`` without the :func:`quiet_at_default` settings that hold their default.

    Args:
        cfg: A config dataclass.

    Returns:
        A new dict to fingerprint.
    """
    quiet = {f.name: f.default for f in dataclasses.fields(cfg) if is_quiet_at_default(f)}
    return {k: v for k, v in to_dict(cfg).items() if k not in quiet or quiet[k] != v}


def load_config(
    cls: type[T],
    path: str | Path | None = None,
    overrides: Sequence[str] = (),
    *,
    data: Mapping[str, Any] | None = None,
) -> T:
    """Build ``cls`` from an optional YAML file, an optional mapping, then ``key=value`` overrides.

    Later sources win: YAML < ``data`` < ``overrides``. A YAML file may name other files under
    ``_base_`` (a path or list of paths, relative to the file) that it extends.

    Args:
        cls: The config dataclass to build (nested dataclass fields are built from sub-mappings).
        path: A YAML preset (None: start from the defaults).
        overrides: ``"dotted.key=value"`` strings, values parsed as YAML (``top_k=5``,
            ``retriever.kind=bm25``).
        data: A mapping merged over the YAML (deeply), before the overrides.

    Returns:
        The config, every value converted to its field's type.

    Raises:
        ConfigError: An unknown key (with the closest known one), a value of the wrong type or out
            of range, or a missing or malformed YAML file; the message names the key and where it came from.
    """
    merged, origin = merged_sources(path, overrides, data=data)
    return from_dict(cls, merged, origin=origin)


def merged_sources(
    path: str | Path | None = None, overrides: Sequence[str] = (), *, data: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], str]:
    """The plain data :func:`load_config` builds a config from, and where it came from (for errors):
    for a caller that needs one section before the whole config is built.

    Args:
        path: A YAML preset (None: nothing).
        overrides: ``"dotted.key=value"`` strings, applied last.
        data: A mapping merged over the YAML (deeply), before the overrides.

    Returns:
        ``(merged data, origin)``.
    """
    merged: dict[str, Any] = {}
    origin = "<defaults>"
    if path is not None:
        merged = read_yaml(path)
        origin = str(path)
    if data:
        merged = _deep_merge(merged, dict(data))
    for item in overrides:
        key, value = parse_override(item)
        _set_dotted(merged, key, value)
        origin = f"{origin} + overrides" if "overrides" not in origin else origin
    return merged, origin


def parse_args_with_overrides(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> argparse.Namespace:
    """Parse ``argv`` letting ``key=value`` overrides sit anywhere among the options.

    argparse gives a positional list only one contiguous run, so ``-c P a=1 --limit 3 b=2`` would
    fail on ``b=2``; the strays that look like overrides are appended to ``args.overrides``.
    """
    args, extra = parser.parse_known_args(argv)
    stray = [a for a in extra if a.startswith("-") or "=" not in a or not hasattr(args, "overrides")]
    if stray:
        parser.error(f"unrecognized arguments: {' '.join(stray)}")
    if extra:
        args.overrides = [*args.overrides, *extra]
    return args


def parse_override(item: str) -> tuple[str, Any]:
    """``a.b=3`` -> ("a.b", 3). The value is parsed as YAML, so lists and nulls work."""
    if "=" not in item:
        raise ConfigError(f"override {item!r} is not of the form key=value")
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {item!r} has an empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


def from_dict(cls: type[T], data: Mapping[str, Any], *, origin: str = "<dict>", prefix: str = "") -> T:
    """Recursively build a dataclass, checking keys and converting values to the field types."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
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


def save_config(cfg: Any, path: str | Path) -> None:
    write_text_atomic(path, yaml.safe_dump(to_dict(cfg), sort_keys=False))


# ---------------------------------------------------------------------------------------------


def read_yaml(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A YAML preset as plain data, its ``_base_`` includes resolved.

    ``_base_`` (a path or a list of paths, relative to the file that names it) may stand at the
    top, where the file extends whole presets, or inside a section, where that section extends
    them: ``labeler: {_base_: ../labeler/minilm-cpu.yaml, epochs: 2}`` is the MiniLM training
    preset with two epochs. So a preset reuses another's values instead of restating them.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path.resolve() in _seen:
        raise ConfigError(f"{path}: '{BASE_KEY}' includes form a cycle")
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: top level must be a mapping, got {type(loaded).__name__}")
    return _with_bases(loaded, path, (*_seen, path.resolve()))


def _with_bases(node: Any, path: Path, seen: tuple[Path, ...]) -> Any:
    """``node`` with every ``_base_`` in it (at any depth) replaced by the files it names."""
    if isinstance(node, list):
        return [_with_bases(item, path, seen) for item in node]
    if not isinstance(node, dict):
        return node
    own = {key: _with_bases(value, path, seen) for key, value in node.items() if key != BASE_KEY}
    bases = node.get(BASE_KEY)
    if bases is None:
        return own
    merged: dict[str, Any] = {}
    for base in [bases] if isinstance(bases, str) else list(bases):
        merged = _deep_merge(merged, read_yaml(path.parent / base, seen))
    return _deep_merge(merged, own)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``: nested keys named one by one (an empty mapping is a leaf)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _field_value(f: dataclasses.Field, hint: Any, value: Any, *, origin: str, key: str) -> Any:
    """``value`` converted to field ``f``'s type. A partial mapping for a nested config extends that
    field's own default (a factory may differ from the nested class's defaults: the quickstart's
    Labeler recipe), not the class's."""
    default = _field_default(f)
    if isinstance(value, Mapping) and dataclasses.is_dataclass(default) and not isinstance(default, type):
        value = _deep_merge(_plain(default), value)
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


def _deep_merge(a: dict[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _set_dotted(target: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


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
