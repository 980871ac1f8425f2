"""Check that every name is imported from the module that defines it (DESIGN.md, "Layout").

When a module is split or moved, its callers change their imports; the old module does not keep
the moved names alive for them, or a reader looking for "where is this defined" finds two answers.
So, read with :mod:`ast` over the package, its tests, benchmarks and thin scripts:

* a module of ``efficientrag`` (not a package ``__init__``) re-exports a name when it takes the
  name from another ``efficientrag`` module and then offers it: in ``__all__``, as
  ``import X as X``, under another name at top level (``_old = new``), or simply because some
  other file imports the name from it. Each such name is a problem.
* a package ``__init__`` is a public entrance and may offer names of its submodules, but not
  private ones (``_name``).
* ``from efficientrag.a.b import N`` anywhere must name a module that defines ``N`` (or a
  submodule ``N`` of ``efficientrag.a.b``).

Run ``python .ci/check_reexports.py`` from the repository root; it prints one line per problem
(``file:line: message``) and exits 1 when there is any. ``tests/test_reexports.py`` runs it.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "efficientrag"
# Where callers of the package live, besides the package itself.
CALLERS = ("tests", "benchmarks", "train", "synth", "eval", ".ci")


@dataclass
class Module:
    """What one module of the package binds at top level."""

    name: str
    path: Path
    is_package: bool
    defined: set[str] = field(default_factory=set)  # bound by def, class, assignment, a 3rd-party import
    imported: dict[str, tuple[int, str]] = field(default_factory=dict)  # name -> (line, source module)
    offered: dict[str, int] = field(default_factory=dict)  # explicit re-exports: name -> line
    aliases: dict[str, int] = field(default_factory=dict)  # ``_old = imported``: name -> line


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, node.module] if node.module else base)


def _top_statements(body: list[ast.stmt]):
    """Top-level statements, looking inside ``if``/``try`` blocks (``if TYPE_CHECKING:`` too)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _top_statements(stmt.body)
            yield from _top_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                yield from _top_statements(block)
        else:
            yield stmt


def _is_alias(targets: list[ast.expr], value: ast.expr | None, imported: dict[str, object]) -> bool:
    """``name = imported`` or ``a, b = imported_x, imported_y`` (not ``pair = (x, y)``: a new value)."""
    if value is None or len(targets) != 1:
        return False
    target = targets[0]
    if isinstance(target, ast.Name) and isinstance(value, ast.Name):
        return value.id in imported
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return all(isinstance(v, ast.Name) and v.id in imported for v in value.elts)
    return False


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in _names(t)]
    return []


def read_module(path: Path, root: Path) -> Module:
    name = module_name(path, root)
    mod = Module(name, path, path.name == "__init__.py")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for stmt in _top_statements(tree.body):
        if isinstance(stmt, ast.ImportFrom):
            source = _source(stmt, name, mod.is_package)
            ours = source == PACKAGE or source.startswith(PACKAGE + ".")
            for alias in stmt.names:
                bound = alias.asname or alias.name
                if ours:
                    mod.imported[bound] = (stmt.lineno, source)
                    if alias.asname == alias.name:
                        mod.offered[bound] = stmt.lineno
                else:
                    mod.defined.add(bound)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                if not (alias.name == PACKAGE or alias.name.startswith(PACKAGE + ".")):
                    mod.defined.add(bound)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            mod.defined.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            bound = [n for t in targets for n in _names(t)]
            mod.defined.update(bound)
            # ``_old = new`` or ``_a, _b = x, y`` where the right side is imported: an alias.
            if _is_alias(targets, stmt.value, mod.imported):
                mod.aliases.update(dict.fromkeys(bound, stmt.lineno))
            if "__all__" in bound and isinstance(stmt.value, (ast.List, ast.Tuple)):
                for elt in stmt.value.elts:
                    if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                        mod.offered.setdefault(elt.value, stmt.lineno)
    used = _referenced(tree)
    for bound, (line, _src) in mod.imported.items():
        if bound not in used:  # kept only for others to import (``# noqa: F401``)
            mod.offered.setdefault(bound, line)
    return mod


def _referenced(tree: ast.Module) -> set[str]:
    """Names the module's code reads (string annotations included), imports aside."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value))
    return names


@dataclass(frozen=True)
class Use:
    """``from <source> import <name>`` written in ``path`` at ``line``."""

    path: Path
    line: int
    source: str
    name: str


def uses_in(path: Path, root: Path, modules: dict[str, Module]) -> list[Use]:
    """Every ``from efficientrag... import name`` in ``path``, at any depth (functions too)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError:
        return []
    own = module_name(path, root) if path.is_relative_to(root / PACKAGE) else ""
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _source(node, own, is_package) if node.level else (node.module or "")
            if source == PACKAGE or source.startswith(PACKAGE + "."):
                out.extend(Use(path, node.lineno, source, a.name) for a in node.names)
    return out


def all_modules(root: Path) -> dict[str, Module]:
    return {
        (m := read_module(p, root)).name: m
        for p in sorted((root / PACKAGE).rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def caller_files(root: Path) -> list[Path]:
    files = sorted((root / PACKAGE).rglob("*.py"))
    for folder in CALLERS:
        if (root / folder).is_dir():
            files += sorted((root / folder).rglob("*.py"))
    return [f for f in files if "__pycache__" not in f.parts and ".venv" not in f.parts]


def reexported(root: Path) -> dict[tuple[str, str], tuple[Path, int]]:
    """Every (module, name) a non-package module offers that another module defines."""
    modules = all_modules(root)
    used: set[tuple[str, str]] = set()
    for path in caller_files(root):
        for use in uses_in(path, root, modules):
            used.add((use.source, use.name))
    out: dict[tuple[str, str], tuple[Path, int]] = {}
    for mod in modules.values():
        if mod.is_package:
            continue
        for name, (line, _src) in mod.imported.items():
            if (mod.name, name) in used or name in mod.offered:
                out[(mod.name, name)] = (mod.path, mod.offered.get(name, line))
        for name, line in mod.aliases.items():
            out[(mod.name, name)] = (mod.path, line)
    return out


def check(root: Path) -> list[str]:
    """Every problem found, as printable ``file:line: message`` lines."""
    modules = all_modules(root)
    problems: list[str] = []
    for (module, name), (path, line) in sorted(reexported(root).items()):
        problems.append(
            f"{path.relative_to(root)}:{line}: {module} re-exports {name}; its callers should import it "
            "from the module that defines it"
        )
    for mod in modules.values():
        if not mod.is_package:
            continue
        for name, (line, _src) in sorted(mod.imported.items()):
            if name.startswith("_") and name in mod.offered:
                problems.append(f"{mod.path.relative_to(root)}:{line}: {mod.name} offers the private {name}")
    for path in caller_files(root):
        for use in uses_in(path, root, modules):
            target = modules.get(use.source)
            if target is None or target.is_package or f"{use.source}.{use.name}" in modules:
                continue
            if use.name in target.imported and use.name not in target.defined:
                _line, src = target.imported[use.name]
                problems.append(
                    f"{path.relative_to(root)}:{use.line}: imports {use.name} from {use.source}, "
                    f"which takes it from {src}: import it from there"
                )
    return sorted(set(problems))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    problems = check(root)
    for line in problems:
        print(line)
    print(f"{len(problems)} re-export problem(s) under {root}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
