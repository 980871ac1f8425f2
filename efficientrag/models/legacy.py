"""Folders in the first save format (``efficientrag_model.json``): read, and convert to ``config.json``.

Models trained before the ``transformers`` classes existed keep loading: the old spec maps field by
field onto :class:`~efficientrag.models.configuration.LabelerConfig`/``FilterConfig`` and the weight
names did not change, so the network is rebuilt in memory. :func:`convert_folder` (also
``python -m efficientrag.models.legacy OLD [NEW]``) rewrites such a folder in the current format, so
``AutoModel`` and the Hub can read it too.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from safetensors.torch import load_model
from transformers import CONFIG_MAPPING

from efficientrag.models.configuration import CONFIG_CLASSES, WordClassifierConfig
from efficientrag.models.network import MODEL_CLASSES, TokenClassifierNetwork
from efficientrag.models.spec import SPEC_FILE, WEIGHTS_FILE, ModelSpec


def is_legacy_folder(folder: Path) -> bool:
    return (folder / SPEC_FILE).is_file() and not (folder / "config.json").is_file()


def config_from_spec(spec: ModelSpec, source: Path) -> WordClassifierConfig:
    if spec.backbone_model_type not in CONFIG_MAPPING:
        raise ValueError(
            f"{source / SPEC_FILE}: backbone type {spec.backbone_model_type!r} is unknown to this "
            "transformers version"
        )
    encoder = CONFIG_MAPPING[spec.backbone_model_type].from_dict(spec.backbone_config)
    return CONFIG_CLASSES[spec.kind](
        encoder_config=encoder,
        encoder_name=spec.backbone_name,
        pooling=spec.pooling,
        max_length=spec.max_length,
        word_aggregation=spec.word_aggregation,
        dropout=spec.dropout,
        token_labels=list(spec.token_labels),
        tag_labels=list(spec.tag_labels),
    )


def load_legacy_network(folder: Path) -> TokenClassifierNetwork:
    """The network of an old-format folder, rebuilt from its spec and loaded from its safetensors."""
    spec = ModelSpec.load(folder)
    config = config_from_spec(spec, folder)
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        raise FileNotFoundError(f"{weights} not found")
    network = MODEL_CLASSES[spec.kind](config)
    missing, unexpected = load_model(network, str(weights), strict=False)
    if missing or unexpected:
        raise ValueError(
            f"{weights} does not match the network rebuilt from {folder / SPEC_FILE}: "
            f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}"
        )
    network.eval()
    return network


def convert_folder(source: str | Path, target: str | Path | None = None) -> Path:
    """Write an old-format folder in the current format (in place when ``target`` is None)."""
    from efficientrag.models.base import write_model_folder
    from efficientrag.models.tokenizer_setup import load_tokenizer

    source = Path(source)
    if not (source / SPEC_FILE).is_file():
        raise FileNotFoundError(f"{source / SPEC_FILE} not found: {source} is not an old-format folder")
    network = load_legacy_network(source)
    tokenizer = load_tokenizer(str(source), local_files_only=True)
    # metrics.json of the training run stays with the model (copied before an in-place swap).
    return write_model_folder(target or source, network, tokenizer, carry_from=source)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m efficientrag.models.legacy",
        description=f"Convert a Labeler/Filter folder saved with {SPEC_FILE} to config.json (transformers) format.",
    )
    parser.add_argument("source", help=f"folder holding {SPEC_FILE}")
    parser.add_argument("target", nargs="?", help="where to write (default: replace the source folder)")
    args = parser.parse_args(argv)
    out = convert_folder(args.source, args.target)
    print(json.dumps({"converted": str(out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
