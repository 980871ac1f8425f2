"""Where the YAML presets (``configs/``) are, for code whose defaults are a preset (the quickstart's
model recipes are the MiniLM CPU presets): the values are then written once, in the YAML.

A source checkout (the editable install the README uses) has them beside the package; a wheel
carries a copy inside it (``efficientrag/configs``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from efficientrag.config import read_yaml
from efficientrag.errors import ConfigError

_PACKAGE = Path(__file__).resolve().parent.parent  # efficientrag/
CANDIDATES = (_PACKAGE / "configs", _PACKAGE.parent / "configs")


def preset_path(name: str) -> Path:
    """``configs/<name>`` (e.g. ``quickstart/toy.yaml``)."""
    for root in CANDIDATES:
        if (root / name).is_file():
            return root / name
    raise ConfigError(
        f"preset configs/{name} not found (looked in {', '.join(str(c) for c in CANDIDATES)}); "
        "install efficientrag from its repository (`pip install -e .`), which has configs/"
    )


def read_preset(name: str) -> dict[str, Any]:
    """``configs/<name>`` as plain data, its ``_base_`` includes resolved."""
    return read_yaml(preset_path(name))
