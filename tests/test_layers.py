"""Imports point down DESIGN.md's layers and form no circle (``.ci/check_layers.py``).

The first test checks the package itself; the others give the checker small made-up packages, so
that each kind of problem is shown to be found (an import inside a function, one under
``TYPE_CHECKING``, the library reaching for the test doubles, a cycle)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / ".ci" / "check_layers.py"


def _checker():
    spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_layers"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_package_imports_only_down_its_layers():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout
    assert done.stdout == ""


def _package(root: Path, files: dict[str, str]) -> Path:
    files = {"efficientrag/__init__.py": "__version__ = '0'\n", **files}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in {p.parent for p in root.rglob("*.py")} - {root}:
        (folder / "__init__.py").touch()
    return root


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("from efficientrag.eval import report\n", 1),
        ("import json\n\n\ndef f():\n    from efficientrag.eval.report import write\n", 5),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import efficientrag.eval.report\n", 3),
        ("from ..eval import report\n", 1),
    ],
    ids=["top-level", "in-a-function", "type-checking", "relative"],
)
def test_an_import_up_the_layers_is_named_with_file_and_line(tmp_path, text, line):
    root = _package(tmp_path, {"efficientrag/treehop/fate.py": text, "efficientrag/eval/report.py": ""})
    problems = _checker().check(root)
    assert problems == [
        f"efficientrag/treehop/fate.py:{line}: efficientrag.treehop.fate (layer 4) imports "
        "efficientrag.eval.report (layer 7)"
    ]


def test_imports_down_or_sideways_pass_and_a_lazy_name_of_the_root_does_not(tmp_path):
    root = _package(
        tmp_path,
        {
            "efficientrag/treehop/fate.py": "from efficientrag.retrieval import metrics\nfrom . import other\n",
            "efficientrag/treehop/other.py": "from efficientrag import __version__, jsonl\n",
            "efficientrag/retrieval/metrics.py": "from efficientrag import EfficientRAG\n",
            "efficientrag/jsonl.py": "",
        },
    )
    assert _checker().check(root) == [
        "efficientrag/retrieval/metrics.py:1: imports EfficientRAG through the package root; "
        "import it from its module"
    ]


def test_the_library_may_not_import_the_test_doubles_but_they_may_import_anything(tmp_path):
    root = _package(
        tmp_path,
        {
            "efficientrag/data/reader.py": "def f():\n    import efficientrag.testing.fakes\n",
            "efficientrag/testing/fakes.py": "import efficientrag.cli\n",
            "efficientrag/cli.py": "",
        },
    )
    assert _checker().check(root) == [
        "efficientrag/data/reader.py:2: the library imports efficientrag.testing.fakes (test doubles)"
    ]


def test_a_module_without_a_layer_is_reported(tmp_path):
    root = _package(tmp_path, {"efficientrag/newthing.py": ""})
    assert _checker().check(root) == [
        "efficientrag/newthing.py:1: newthing has no layer in .ci/check_layers.py LAYERS: add it"
    ]


def test_each_circle_of_imports_is_reported_once_whatever_kind_of_import_closes_it(tmp_path):
    root = _package(
        tmp_path,
        {
            "efficientrag/data/a.py": "from efficientrag.data import b\n",
            "efficientrag/data/b.py": "import efficientrag.data.c\n",
            "efficientrag/data/c.py": "from efficientrag.data.a import x\nfrom efficientrag.data import b\n",
            # Deferred to call time, or for annotations only: still a circle.
            "efficientrag/data/d.py": "from efficientrag.data import e\n",
            "efficientrag/data/e.py": "def f():\n    from efficientrag.data import d\n",
            "efficientrag/data/f.py": "from efficientrag.data import g\n",
            "efficientrag/data/g.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from efficientrag.data import f\n",
        },
    )
    assert _checker().check(root) == [
        "efficientrag/data/a.py:1: import circle: efficientrag.data.a -> efficientrag.data.b -> "
        "efficientrag.data.c -> efficientrag.data.a",
        "efficientrag/data/d.py:1: import circle: efficientrag.data.d -> efficientrag.data.e -> efficientrag.data.d",
        "efficientrag/data/f.py:1: import circle: efficientrag.data.f -> efficientrag.data.g -> efficientrag.data.f",
    ]


def test_the_longest_chain_of_imports_is_walked_down_from_a_module(tmp_path):
    checker = _checker()
    root = _package(
        tmp_path,
        {
            "efficientrag/data/a.py": "from efficientrag.data import b, d\n",
            "efficientrag/data/b.py": "def f():\n    from efficientrag.data import c\n",
            "efficientrag/data/c.py": "from efficientrag.data import d\n",
            "efficientrag/data/d.py": "",
        },
    )
    modules = {checker.module_name(p, root): p for p in sorted((root / "efficientrag").rglob("*.py"))}
    graph = {m: checker.imports_of(p, m, modules) for m, p in modules.items()}
    assert checker.longest_chain(graph, "efficientrag.data.a") == [
        "efficientrag.data.a",
        "efficientrag.data.b",
        "efficientrag.data.c",
        "efficientrag.data.d",
    ]


def test_the_script_prints_each_problem_and_fails(tmp_path):
    root = _package(tmp_path, {"efficientrag/jsonl.py": "from efficientrag.data.errors import E\n"})
    (root / "efficientrag" / "data").mkdir()
    (root / "efficientrag" / "data" / "errors.py").write_text("class E(Exception): ...\n")
    done = subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "efficientrag/jsonl.py:1: efficientrag.jsonl (layer 1) imports efficientrag.data.errors (layer 2)"
    ]


def test_the_evaluation_tally_and_the_retrieval_tally_count_the_same_fates():
    from efficientrag.eval.gold_fate import tally_fates as eval_tally
    from efficientrag.retrieval.metrics import tally_fates

    fates = [{"a": "kept", "b": "never_retrieved"}, {"c": "kept"}]
    assert eval_tally(fates) == {
        "gold": 3,
        "kept": 2,
        "tagged_terminate": 0,
        "over_budget": 0,
        "never_retrieved": 1,
    }
    assert tally_fates(fates, ("kept", "never_retrieved", "pruned")) == {
        "gold": 3,
        "kept": 2,
        "never_retrieved": 1,
        "pruned": 0,
    }
