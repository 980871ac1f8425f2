"""How the package is laid out, in four counts.

``python .ci/layout_numbers.py`` prints the modules at the package root, the names modules
re-export for others (:mod:`check_reexports`), the import circles (every import counted, as
:mod:`check_layers` counts them) and the longest chain of imports from the ``efficientrag``
console script's module down to a module that imports nothing of the package.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def numbers(root: Path) -> dict[str, object]:
    layers, reexports = _load("check_layers"), _load("check_reexports")
    package = root / layers.PACKAGE
    modules = {layers.module_name(p, root): p for p in sorted(package.rglob("*.py"))}
    graph = {m: layers.imports_of(p, m, modules) for m, p in modules.items()}
    entry = next(m for m in ("efficientrag.cli.main", "efficientrag.cli") if m in modules)
    chain = layers.longest_chain(graph, entry)
    # The CLI's own floors: the same walk among the command line's modules only.
    is_cli = {m for m in graph if m.split(".")[1:2] and m.split(".")[1].startswith(("cli", "data_flags"))}
    if entry != "efficientrag.cli":
        is_cli.discard("efficientrag.cli")  # the package's entrance, above its entry module
    cli_graph = {m: [i for i in graph[m] if i.target in is_cli] for m in is_cli}
    cli_floors = layers.longest_chain(cli_graph, entry)
    return {
        "root modules": len(list(package.glob("*.py"))),
        "re-exported names": len(reexports.reexported(root)),
        "import circles": len(layers.find_cycles(graph)),
        "longest chain from cli": f"{len(chain) - 1} imports: {' -> '.join(chain)}",
        "floors of cli modules": f"{len(cli_floors)}: {' -> '.join(cli_floors)}",
    }


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent
    for key, value in numbers(root).items():
        print(f"{key}: {value}")
