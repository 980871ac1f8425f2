"""Check that imports in ``efficientrag/`` point down DESIGN.md's layers and form no cycle.

A module may import only from its own layer or a lower one, function-level and
``TYPE_CHECKING`` imports included: a reader (or a tool) following a dependency then always moves
down the house, never back up. ``efficientrag/testing/`` (test doubles) may import anything, and
nothing in the library may import it. Every ``Import``/``ImportFrom`` node of every module is read
with :mod:`ast`, so an import inside a function counts like one at the top.

No two modules may import each other, directly or around a circle, by any import: one that runs
on import can fail half-way through loading a package, and any other (inside a function, under
``if TYPE_CHECKING:``) still means neither module can be read, moved or tested without the other.
Each circle is reported once, as the shortest path around it.

Run ``python .ci/check_layers.py`` from the repository root; it prints one line per problem
(``file:line: message``) and exits 1 when there is any. ``tests/test_layers.py`` runs it.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "efficientrag"

# Each top-level module or subpackage of efficientrag, and its layer (lowest first).
LAYERS: dict[str, int] = {
    # 1: utilities that know nothing of the domain, and the model classes built only on them.
    "atomic": 1,  # atomic file writes
    "closing": 1,  # `with` support for objects released by close()
    "config": 1,  # the YAML/dataclass config loader every entry point shares
    "config_values": 1,  # config dataclasses to and from plain values (the one type check of a value)
    "setting_fields": 1,  # what a config field declares (range, roles) and the one check of it
    "cpu": 1,  # CPU thread settings
    "errors": 1,  # errors every layer may raise (DataFormatError)
    "fingerprint": 1,  # digests of files, folders and JSON
    "hub": 1,  # offline model paths, Hugging Face hub access
    "jsonl": 1,  # JSONL reading and appending
    "lazy": 1,  # lazy package exports
    "record_fields": 1,  # field checks for records read from files
    "run_lock": 1,  # one process per run folder
    "text": 1,  # normalization and word splitting
    "models": 1,  # Labeler/Filter in the transformers layout
    # 2: data and LLM access.
    "data": 2,
    "llm": 2,
    # 3: search backends and the training loop.
    "retrieval": 3,
    "training": 3,
    # 4: what is built from them: synthesis, the EfficientRAG loop, TreeHop.
    "synth": 4,
    "pipeline": 4,
    "treehop": 4,
    # 5: the methods compared.
    "baselines": 5,
    # 6: the experiment: its config, prepared data, how a method is assembled, run fingerprints,
    # training pools and the training jobs that run on them.
    "experiment": 6,
    # 7: evaluation: runs, metrics and reports.
    "eval": 7,
    # 8: jobs and services built on everything below.
    "adapt": 8,
    "quickstart": 8,
    "serve": 8,
    "distill": 8,
    # 9: the command line: parser, flags, one module per command family.
    "cli": 9,
}

# The package root only installs the Auto-class hook and names lazy exports (strings, not imports).
ROOT_LAYER = 1
TESTING = "testing"


@dataclass(frozen=True)
class Import:
    """One import of an ``efficientrag`` module, where it is written."""

    line: int
    target: str  # dotted module name
    runs_on_import: bool  # top level, outside ``if TYPE_CHECKING:``
    via_root: str | None = None  # a name taken from the package root that is not a module


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module in ``path`` (``efficientrag/a/b.py`` → ``efficientrag.a.b``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules.get(name, Path()).name == "__init__.py"


def _resolve_relative(node: ast.ImportFrom, module: str, modules: dict[str, Path]) -> str:
    base = module.split(".") if is_package(module, modules) else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, node.module] if node.module else base)


def _from_targets(
    node: ast.ImportFrom, module: str, modules: dict[str, Path]
) -> list[tuple[str, str | None]]:
    source = _resolve_relative(node, module, modules) if node.level else (node.module or "")
    if source != PACKAGE and not source.startswith(PACKAGE + "."):
        return []
    targets: list[tuple[str, str | None]] = []
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in modules:
            targets.append((sub, None))
        elif source == PACKAGE:
            targets.append((PACKAGE, alias.name))
        else:
            targets.append((source, None))
    return targets


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, runs: bool):
    """Yield every import node under ``node`` with whether it runs when the module is imported."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, runs
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _walk(child, False)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), False)
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), runs)
        else:
            yield from _walk(child, runs)


def imports_of(path: Path, module: str, modules: dict[str, Path]) -> list[Import]:
    """Every ``efficientrag`` import written anywhere in the module at ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []
    for node, runs in _walk(tree, True):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    found.append(Import(node.lineno, alias.name, runs))
        else:
            for target, via_root in _from_targets(node, module, modules):
                found.append(Import(node.lineno, target, runs, via_root))
    return found


def layer_of(module: str) -> int | None:
    """The layer of a dotted module name; None for ``efficientrag.testing`` and unknown names."""
    parts = module.split(".")
    if parts == [PACKAGE]:
        return ROOT_LAYER
    return LAYERS.get(parts[1])


def root_names(path: Path) -> set[str]:
    """Names the package root itself binds at top level (``__version__``), not its lazy exports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def layer_problems(modules: dict[str, Path], graph: dict[str, list[Import]], root: Path) -> list[str]:
    """One ``file:line: message`` per import that points up, reaches ``testing`` or is unplaced."""
    problems: list[str] = []
    own_names = root_names(modules[PACKAGE])
    for module, path in sorted(modules.items()):
        where = path.relative_to(root)
        top = module.split(".")[1] if "." in module else None
        if top == TESTING:
            continue
        own = layer_of(module)
        if own is None:
            problems.append(f"{where}:1: {top} has no layer in .ci/check_layers.py LAYERS: add it")
            continue
        for imp in sorted(set(graph[module]), key=lambda i: (i.line, i.target)):
            if imp.via_root in own_names:
                continue
            if imp.via_root:
                problems.append(
                    f"{where}:{imp.line}: imports {imp.via_root} through the package root; import it from its module"
                )
                continue
            if imp.target.split(".")[1:2] == [TESTING]:
                problems.append(f"{where}:{imp.line}: the library imports {imp.target} (test doubles)")
                continue
            theirs = layer_of(imp.target)
            if theirs is not None and theirs > own:
                problems.append(
                    f"{where}:{imp.line}: {module} (layer {own}) imports {imp.target} (layer {theirs})"
                )
    return problems


def import_edges(graph: dict[str, list[Import]]) -> dict[str, list[str]]:
    """Module -> the package's modules it imports, every import counted: top level, inside a
    function or under ``TYPE_CHECKING`` (a circle of any kind means neither module can be read
    without the other)."""
    return {
        m: sorted({i.target for i in imps if i.target in graph and i.target != m})
        for m, imps in graph.items()
    }


def find_cycles(graph: dict[str, list[Import]]) -> list[list[str]]:
    """Each circle of imports: one per strongly connected component (Tarjan), written as a path
    that starts and ends at its first module (``a -> b -> a``)."""
    edges = import_edges(graph)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges) + 100))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_circle(component, edges) for component in sorted(components)]


def _circle(component: list[str], edges: dict[str, list[str]]) -> list[str]:
    """The shortest path from the component's first module back to itself (breadth first)."""
    start, inside = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in edges[node]:
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if nxt in inside and nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    return [*component, start]  # not reached: a component's modules reach each other


def longest_chain(graph: dict[str, list[Import]], start: str) -> list[str]:
    """The longest path of imports down from ``start``; an import that closes a circle (an edge
    back to a module on the path being walked) is left out, so the walk ends."""
    edges = import_edges(graph)
    back: set[tuple[str, str]] = set()
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def find_back_edges(node: str) -> None:
        state[node] = 1
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                back.add((node, nxt))
            elif nxt not in state:
                find_back_edges(nxt)
        state[node] = 2

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges) + 100))
    find_back_edges(start)
    best: dict[str, list[str]] = {}

    def walk(node: str) -> list[str]:
        if node not in best:
            tails = [walk(n) for n in edges[node] if (node, n) not in back]
            best[node] = [node, *max(tails, key=len, default=[])]
        return best[node]

    return walk(start)


def check(root: Path) -> list[str]:
    """Every problem found in ``root/efficientrag``, as printable lines."""
    modules = {module_name(p, root): p for p in sorted((root / PACKAGE).rglob("*.py"))}
    graph = {m: imports_of(p, m, modules) for m, p in modules.items()}
    problems = layer_problems(modules, graph, root)
    for cycle in find_cycles(graph):
        first = modules[cycle[0]].relative_to(root)
        problems.append(f"{first}:1: import circle: {' -> '.join(cycle)}")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    problems = check(root)
    for line in problems:
        print(line)
    print(f"{len(problems)} layer problem(s) in {root / PACKAGE}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
