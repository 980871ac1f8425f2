"""Every name is imported from the module that defines it (``.ci/check_reexports.py``).

The first test checks the package, its tests, benchmarks and scripts; the others give the checker
small made-up packages, so that each way of keeping an old import path alive is shown to be found:
a name offered in ``__all__``, ``import X as X``, an unused import kept for others, an alias under
an old private name, a name some caller takes from a module that only imports it, and a package
``__init__`` offering a private name."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / ".ci" / "check_reexports.py"


def _checker():
    spec = importlib.util.spec_from_file_location("check_reexports", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_reexports"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_no_module_keeps_a_name_alive_for_an_old_import_path():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout
    assert done.stdout == ""


def _package(root: Path, files: dict[str, str]) -> Path:
    files = {"efficientrag/__init__.py": "", "efficientrag/home.py": "def f(): ...\n_p = 1\n", **files}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _reexport(line: int, name: str) -> str:
    return (
        f"efficientrag/old.py:{line}: efficientrag.old re-exports {name}; its callers should import it "
        "from the module that defines it"
    )


@pytest.mark.parametrize(
    ("text", "line", "name"),
    [
        ('from efficientrag.home import f\n\n__all__ = ["f"]\n', 3, "f"),
        ("from efficientrag.home import f as f\n", 1, "f"),
        ("from efficientrag.home import f  # noqa: F401\n", 1, "f"),
        ("from efficientrag.home import _p\n\n_old = _p\n", 3, "_old"),
        ("from .home import _p\n\n_a, _b = _p, _p\n", 3, "_a"),
    ],
    ids=["__all__", "as-itself", "unused", "private-alias", "tuple-alias"],
)
def test_a_module_offering_another_modules_name_is_reported(tmp_path, text, line, name):
    root = _package(tmp_path, {"efficientrag/old.py": text})
    assert _reexport(line, name) in _checker().check(root)


def test_a_caller_taking_a_name_from_a_module_that_only_imports_it_is_told_where_it_lives(tmp_path):
    root = _package(
        tmp_path,
        {
            "efficientrag/old.py": "from efficientrag.home import f\n\n\ndef g():\n    return f()\n",
            "tests/test_x.py": "def test():\n    from efficientrag.old import f\n",
        },
    )
    assert _checker().check(root) == [
        _reexport(1, "f"),
        "tests/test_x.py:2: imports f from efficientrag.old, which takes it from efficientrag.home: "
        "import it from there",
    ]


def test_names_used_where_they_are_imported_and_public_package_entrances_pass(tmp_path):
    root = _package(
        tmp_path,
        {
            "efficientrag/user.py": "from efficientrag.home import f\n\nPAIR = (f, f)\nx: 'f'\n",
            "efficientrag/pkg/__init__.py": "from efficientrag.home import f\n\n__all__ = ['f']\n",
            "tests/test_x.py": "from efficientrag.pkg import f\nfrom efficientrag.home import f\n",
        },
    )
    assert _checker().check(root) == []


def test_a_package_entrance_offering_a_private_name_is_reported(tmp_path):
    root = _package(tmp_path, {"efficientrag/pkg/__init__.py": "from efficientrag.home import _p as _p\n"})
    assert _checker().check(root) == [
        "efficientrag/pkg/__init__.py:1: efficientrag.pkg offers the private _p"
    ]
