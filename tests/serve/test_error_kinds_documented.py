"""Every error kind that /metrics counts (``efficientrag_errors_total{kind}``) is listed in docs/serve.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from efficientrag.serve import errors  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "serve.md"


def test_every_error_kind_is_documented():
    source = Path(errors.__file__).read_text(encoding="utf-8")
    kinds = re.findall(r'^[A-Z_]+ = "([a-z_]+)"$', source, re.M)
    assert "overloaded" in kinds and len(kinds) >= 10
    doc = DOC.read_text(encoding="utf-8")
    listed = doc[doc.index("efficientrag_errors_total{kind}") :][:1200]
    missing = [k for k in kinds if f"`{k}`" not in listed]
    assert not missing, f"docs/serve.md does not list the error kinds {missing}"
