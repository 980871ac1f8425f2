"""efficientrag/models in the transformers layout: one list of model kinds, imports that point down
the layers with no cycle, the torch-free row contract, the first save format out of the package, and
folders saved before the layout changed still loading and predicting as they did."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import efficientrag.models
from efficientrag.models import Filter, Labeler
from efficientrag.models.card import PURPOSE
from efficientrag.models.configuration import CONFIG_CLASSES, MODEL_TYPES, TOKEN_LABELS
from efficientrag.models.inputs import KINDS, ROW_TYPES
from efficientrag.models.modeling import MODEL_CLASSES
from efficientrag.models.wrappers import WRAPPER_CLASSES
from efficientrag.training.config import TrainConfig

PACKAGE = Path(efficientrag.models.__file__).parent
FIXTURES = Path(__file__).parents[1] / "fixtures" / "models"
# Layers above models/ (DESIGN.md: data -> retrieval/llm -> synth/models -> training -> pipeline ...).
ABOVE = ("training", "pipeline", "baselines", "eval", "experiment", "cli", "quickstart", "synth")


def _imports(path: Path) -> set[str]:
    """Every efficientrag module ``path`` imports, at module level or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("efficientrag"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("efficientrag"))
    return found


def test_every_table_keyed_by_model_kind_has_exactly_the_kinds():
    assert KINDS == ("labeler", "filter")
    for table in (ROW_TYPES, CONFIG_CLASSES, MODEL_CLASSES, WRAPPER_CLASSES, TOKEN_LABELS, PURPOSE):
        assert tuple(table) == KINDS
    assert sorted(MODEL_TYPES.values()) == sorted(KINDS)
    assert all(MODEL_CLASSES[k].config_class is CONFIG_CLASSES[k] for k in KINDS)
    assert typing.get_args(typing.get_type_hints(TrainConfig)["model"]) == ("", *KINDS)


def test_models_imports_point_down_and_form_no_cycle():
    modules = {f"efficientrag.models.{p.stem}": p for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    graph = {name: {m for m in _imports(path) if m in modules} - {name} for name, path in modules.items()}
    for name, path in modules.items():
        up = sorted(m for m in _imports(path) if m.split(".")[1] in ABOVE)
        assert not up, f"{name} imports from a layer above models/: {up}"
    # Depth-first search for a back edge.
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join([*trail, node, nxt])}"
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert graph["efficientrag.models.inputs"] == set()  # the row contract depends on nothing of ours


def test_the_row_contract_and_the_kinds_import_without_torch():
    code = (
        "import sys, efficientrag.models.inputs, efficientrag.training.config, efficientrag.synth.merge\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.split() == ["False", "False"], run.stderr[-2000:]


def test_the_models_package_exports_its_names_and_nothing_else():
    for module in ("spec", "legacy", "base", "network", "losses", "onnx_runtime", "quantize"):
        assert importlib.util.find_spec(f"efficientrag.models.{module}") is None, module
    for gone in ("ModelSpec", "convert_folder", "Tagger"):
        with pytest.raises(AttributeError, match=f"has no attribute '{gone}'"):
            getattr(efficientrag.models, gone)
    assert {"Labeler", "Filter", "KINDS", "LabelerConfig"} <= set(dir(efficientrag.models))


# -- folders saved by the code before this layout (tests/fixtures/models/write.py) -------------------


@pytest.mark.parametrize("cls", [Labeler, Filter])
def test_a_folder_saved_before_the_layout_changed_predicts_as_it_did(cls, tmp_path):
    folder = FIXTURES / cls.kind
    expected = json.loads((FIXTURES / "expected.json").read_text())[cls.kind]
    model = cls.from_pretrained(folder, device="cpu")
    inputs = [tuple(pair) for pair in expected["inputs"]] if cls is Labeler else expected["inputs"]
    got = [vars(p) for p in model.predict(inputs)]
    assert len(got) == len(expected["predictions"])
    # Fields added since (the Labeler's early exit, ``exited_at``) hold what a full-depth prediction holds.
    added = {"exited_at": None} if cls is Labeler else {}
    for new, old in zip(got, expected["predictions"], strict=True):
        assert set(new) == set(old) | set(added)
        assert {k: new[k] for k in added} == added
        # Written on another CPU, the last bits of a float may differ; everything else is exact.
        for key, value in old.items():
            assert new[key] == pytest.approx(value, abs=1e-6), key
    assert any(p["truncated_words"] for p in got) or cls is Filter

    # Saving it again writes the same files, the same config and bit-identical weights.
    again = model.save_pretrained(tmp_path / cls.kind)
    assert sorted(p.name for p in again.iterdir()) == sorted(p.name for p in folder.iterdir())
    old_config, new_config = (json.loads((f / "config.json").read_text()) for f in (folder, again))
    old_config.pop("transformers_version"), new_config.pop("transformers_version")
    assert new_config == old_config
    old_weights, new_weights = load_file(folder / "model.safetensors"), load_file(again / "model.safetensors")
    assert sorted(new_weights) == sorted(old_weights)
    assert all(torch.equal(new_weights[k], old_weights[k]) for k in old_weights)
    assert (again / "README.md").read_text() == (folder / "README.md").read_text()
