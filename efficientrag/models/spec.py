"""The model choices (kinds, poolings, word aggregations, label names) and the first save format.

Until format 2, a saved folder held ``efficientrag_model.json`` (this :class:`ModelSpec`: the
backbone's full config and our settings), ``model.safetensors`` and the tokenizer files. Folders are
now written with ``config.json`` (:mod:`efficientrag.models.configuration`); this reader stays so
old folders keep loading and can be converted (:mod:`efficientrag.models.legacy`). The module
imports no torch: the choices are read by config validation on the synthesis side too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from efficientrag.models.inputs import TAGS

SPEC_FILE = "efficientrag_model.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT_VERSION = 1

KINDS = ("labeler", "filter")
POOLINGS = ("mean", "first", "pair")
WORD_AGGREGATIONS = ("first", "mean", "max")

TOKEN_LABELS = {"labeler": ("useless", "useful"), "filter": ("drop", "keep")}


@dataclass
class ModelSpec:
    """Everything except weights and tokenizer: enough to rebuild the network exactly."""

    kind: str
    backbone_model_type: str
    backbone_config: dict[str, Any]
    backbone_name: str = ""
    pooling: str = "mean"
    max_length: int = 384
    word_aggregation: str = "first"
    dropout: float = 0.1
    token_labels: tuple[str, ...] = ()
    tag_labels: tuple[str, ...] = ()
    format_version: int = FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"model kind must be one of {KINDS}, got {self.kind!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.word_aggregation not in WORD_AGGREGATIONS:
            raise ValueError(
                f"word_aggregation must be one of {WORD_AGGREGATIONS}, got {self.word_aggregation!r}"
            )
        if self.max_length < 8:
            raise ValueError(f"max_length must be at least 8, got {self.max_length}")
        if not self.token_labels:
            self.token_labels = TOKEN_LABELS[self.kind]
        if not self.tag_labels and self.kind == "labeler":
            self.tag_labels = TAGS
        self.token_labels = tuple(self.token_labels)
        self.tag_labels = tuple(self.tag_labels)

    @property
    def has_tag_head(self) -> bool:
        return self.kind == "labeler"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / SPEC_FILE
        path.write_text(json.dumps(self.to_json(), indent=2, sort_keys=True), encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | Path) -> ModelSpec:
        """Read an old-format folder's spec (new folders are written by ``save_pretrained``)."""
        path = Path(folder) / SPEC_FILE
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} not found: {folder} is not a saved efficientrag Labeler/Filter "
                "(save one with .save_pretrained(folder))"
            )
        data = json.loads(path.read_text(encoding="utf-8"))
        version = data.get("format_version", 0)
        if version > FORMAT_VERSION:
            raise ValueError(
                f"{path}: format_version {version} is newer than this efficientrag understands "
                f"({FORMAT_VERSION}); upgrade efficientrag"
            )
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: unknown keys {unknown}")
        return cls(**data)
