"""Convert a Labeler/Filter folder of efficientrag's first save format to the current one, once.

`python train/convert_first_format.py OLD_FOLDER [NEW_FOLDER]` (in place without NEW_FOLDER).

Until format 2 a saved folder held ``efficientrag_model.json`` (the backbone's full config and the
model's settings) instead of ``config.json``; the weight names did not change. The package no longer
reads that file (loading such a folder fails naming this command), so the reader lives here, outside
the import path: the settings map field by field onto ``LabelerConfig``/``FilterConfig``, the network
is rebuilt and loaded from the folder's safetensors, and the folder is written again as
``save_pretrained`` writes it, keeping the run's ``metrics.json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from safetensors.torch import load_model
from transformers import CONFIG_MAPPING

from efficientrag.models.configuration import CONFIG_CLASSES, TOKEN_LABELS, WordClassifierConfig
from efficientrag.models.inputs import KINDS, TAGS
from efficientrag.models.model_folder import FIRST_FORMAT_FILE, WEIGHTS_FILES, write_model_folder
from efficientrag.models.modeling import MODEL_CLASSES, TokenClassifierNetwork
from efficientrag.models.tokenization import load_tokenizer

FIRST_FORMAT_VERSION = 1
# Every key of efficientrag_model.json, with the default of the keys that could be left out.
FIELDS: dict[str, Any] = {
    "kind": None,
    "backbone_model_type": None,
    "backbone_config": None,
    "backbone_name": "",
    "pooling": "mean",
    "max_length": 384,
    "word_aggregation": "first",
    "dropout": 0.1,
    "token_labels": (),
    "tag_labels": (),
    "format_version": FIRST_FORMAT_VERSION,
    "extra": {},
}


def read_first_format(folder: Path) -> dict[str, Any]:
    """The settings of ``folder/efficientrag_model.json``, with defaults filled in as they were read."""
    path = folder / FIRST_FORMAT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: {folder} is not a first-format efficientrag folder")
    data = json.loads(path.read_text(encoding="utf-8"))
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ValueError(f"{path}: unknown keys {unknown}")
    missing = sorted(k for k, default in FIELDS.items() if default is None and k not in data)
    if missing:
        raise ValueError(f"{path}: missing keys {missing}")
    spec = {**FIELDS, **data}
    if spec["format_version"] > FIRST_FORMAT_VERSION:
        raise ValueError(f"{path}: format_version {spec['format_version']} is not the first format")
    if spec["kind"] not in KINDS:
        raise ValueError(f"{path}: 'kind' must be one of {KINDS}, got {spec['kind']!r}")
    spec["token_labels"] = list(spec["token_labels"] or TOKEN_LABELS[spec["kind"]])
    spec["tag_labels"] = list(spec["tag_labels"] or (TAGS if spec["kind"] == "labeler" else ()))
    return spec


def config_from_first_format(spec: dict[str, Any], folder: Path) -> WordClassifierConfig:
    if spec["backbone_model_type"] not in CONFIG_MAPPING:
        raise ValueError(
            f"{folder / FIRST_FORMAT_FILE}: backbone type {spec['backbone_model_type']!r} is unknown to this "
            "transformers version"
        )
    encoder = CONFIG_MAPPING[spec["backbone_model_type"]].from_dict(spec["backbone_config"])
    return CONFIG_CLASSES[spec["kind"]](
        encoder_config=encoder,
        encoder_name=spec["backbone_name"],
        pooling=spec["pooling"],
        max_length=spec["max_length"],
        word_aggregation=spec["word_aggregation"],
        dropout=spec["dropout"],
        token_labels=spec["token_labels"],
        tag_labels=spec["tag_labels"],
    )


def load_first_format_network(folder: Path) -> TokenClassifierNetwork:
    """The network of a first-format folder, rebuilt from its settings and loaded from its safetensors."""
    spec = read_first_format(folder)
    config = config_from_first_format(spec, folder)
    weights = folder / WEIGHTS_FILES[0]
    if not weights.is_file():
        raise FileNotFoundError(f"{weights} not found")
    network = MODEL_CLASSES[spec["kind"]](config)
    missing, unexpected = load_model(network, str(weights), strict=False)
    if missing or unexpected:
        raise ValueError(
            f"{weights} does not match the network rebuilt from {folder / FIRST_FORMAT_FILE}: "
            f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}"
        )
    return network.eval()


def convert_folder(source: str | Path, target: str | Path | None = None) -> Path:
    """Write a first-format folder in the current format (in place when ``target`` is None)."""
    source = Path(source)
    network = load_first_format_network(source)
    tokenizer = load_tokenizer(str(source), local_files_only=True)
    # metrics.json of the training run stays with the model (copied before an in-place swap).
    return write_model_folder(target or source, network, tokenizer, carry_from=source)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python train/convert_first_format.py",
        description=f"Convert a Labeler/Filter folder saved with {FIRST_FORMAT_FILE} to config.json (transformers) format.",
    )
    parser.add_argument("source", help=f"folder holding {FIRST_FORMAT_FILE}")
    parser.add_argument("target", nargs="?", help="where to write (default: replace the source folder)")
    args = parser.parse_args(argv)
    out = convert_folder(args.source, args.target)
    print(json.dumps({"converted": str(out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
