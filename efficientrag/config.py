"""The one config loader: typed dataclasses from YAML presets plus ``key=value`` overrides.

Every entry point (CLI, ``train/*.py``, ``synth/run.py``, benchmarks) goes through
:func:`load_config`, so a preset that works in one place works everywhere, and a typo in a
key fails the same way everywhere: early, naming the key and the file it came from. What a value
is converted to, and how a config becomes plain data again, is :mod:`efficientrag.config_values`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from efficientrag.atomic import write_text_atomic
from efficientrag.config_values import deep_merge, from_dict, to_dict
from efficientrag.errors import ConfigError

T = TypeVar("T")

BASE_KEY = "_base_"


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
        merged = deep_merge(merged, dict(data))
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


def save_config(cfg: Any, path: str | Path) -> None:
    write_text_atomic(path, yaml.safe_dump(to_dict(cfg), sort_keys=False))


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
        merged = deep_merge(merged, read_yaml(path.parent / base, seen))
    return deep_merge(merged, own)


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
