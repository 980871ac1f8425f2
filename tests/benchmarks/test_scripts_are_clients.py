"""The benchmark scripts share only public names: none imports a sibling script's private name, and
none builds an argument namespace to hand another script (the protocol's steps take typed options)."""

import ast
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = {p.stem: p for p in sorted(FOLDER.glob("*.py"))}


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = {}  # local name -> the sibling script it names
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in SCRIPTS:
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module in SCRIPTS:
            found += [f"imports {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    for node in ast.walk(tree):
        name = node.value.id if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) else ""
        if name in aliases and node.attr.startswith("_"):
            found.append(f"reads {aliases[name]}.{node.attr}")
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("argparse.Namespace", "Namespace"):
            found.append(f"builds an argparse.Namespace (line {node.lineno})")
    return found


def test_no_script_reads_a_siblings_private_name_or_builds_a_namespace_for_it():
    assert len(SCRIPTS) > 40
    problems = {name: p for name, path in SCRIPTS.items() if (p := _problems(path))}
    assert problems == {}


def test_the_check_finds_what_it_looks_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import argparse\nimport adaptation as ad\nfrom retrieval_efficientrag import _stemming\n"
        "ad._rag(1)\nargparse.Namespace(x=1)\n",
        encoding="utf-8",
    )
    assert sorted(_problems(bad)) == [
        "builds an argparse.Namespace (line 5)",
        "imports retrieval_efficientrag._stemming",
        "reads adaptation._rag",
    ]
