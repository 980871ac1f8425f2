"""The ``transformers`` config of a TreeHop network: what ``config.json`` of a saved model holds.

TreeHop never re-encodes text: it maps (query vector, chunk vector) to the next query vector in the
frozen encoder's space. A saved network is only meaningful next to the encoder it was trained over,
so the config records that encoder (name, dimension, normalization) and loading a model against an
index built with another encoder fails (:func:`efficientrag.treehop.vectors.check_compatible`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from transformers import AutoConfig, PreTrainedConfig

from efficientrag.errors import InvalidArgumentError

TREEHOP_MODEL_TYPE = "efficientrag_treehop"
FORMAT_VERSION = 1
# Divisor of the gate's feature logits: sqrt of the gate width (the official code) or of the
# embedding width (the paper's equation, per the secondary source in docs/treehop.md).
SCORE_SCALES = ("gate", "embed")

OWN_FIELDS = (
    "embed_dim",
    "gate_dim",
    "num_heads",
    "num_blocks",
    "score_scale",
    "dropout",
    "encoder_name",
    "encoder_normalize",
    "format_version",
)


class TreeHopConfig(PreTrainedConfig):
    """Widths of the update network and the encoder it runs over.

    The paper's checkpoint: ``embed_dim=1024`` (BGE-m3), ``gate_dim=2048``, one head, three residual
    blocks (25.2M parameters). The MiniLM CPU preset uses ``embed_dim=384`` with narrower gates.

    Attributes:
        embed_dim: The encoder's embedding width (query and chunk vectors).
        gate_dim: Width of the gate's feature layer.
        num_heads: Attention heads of the gate.
        num_blocks: Residual blocks after the gate (>= 0).
        score_scale: Divisor of the gate's logits: sqrt of ``gate_dim`` (``"gate"``, the official
            code) or of ``embed_dim`` (``"embed"``, the paper's equation).
        dropout: Dropout on the gate's feature weights while training, in [0, 1).
        encoder_name: The encoder the network was trained over.
        encoder_normalize: Whether that encoder's vectors are L2-normalized.
        initializer_range: Std of the weights' initialization.
        format_version: The save format the folder was written in.
    """

    model_type = TREEHOP_MODEL_TYPE
    attribute_map: ClassVar[dict[str, str]] = {"hidden_size": "embed_dim"}

    embed_dim: int = 384
    gate_dim: int = 1024
    num_heads: int = 1
    num_blocks: int = 3
    score_scale: str = "gate"
    # Dropout on the gate's feature weights while training (where the official head has its
    # dropout, built there with 0.0). A regularizer for small training sets; inference ignores it.
    dropout: float = 0.0
    encoder_name: str = ""
    encoder_normalize: bool = True
    initializer_range: float = 0.02
    format_version: int = FORMAT_VERSION

    def __post_init__(self, **kwargs: Any) -> None:
        super().__post_init__(**kwargs)
        where = f"{self.model_type} config"
        for name in ("embed_dim", "gate_dim", "num_heads"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{where}: '{name}' must be a positive integer, got {value!r}")
        if not isinstance(self.num_blocks, int) or self.num_blocks < 0:
            raise InvalidArgumentError(
                f"{where}: 'num_blocks' must be an integer >= 0, got {self.num_blocks!r}"
            )
        if self.score_scale not in SCORE_SCALES:
            raise InvalidArgumentError(
                f"{where}: 'score_scale' must be one of {SCORE_SCALES}, got {self.score_scale!r}"
            )
        if not 0.0 <= float(self.dropout) < 1.0:
            raise InvalidArgumentError(f"{where}: 'dropout' must be in [0, 1), got {self.dropout!r}")
        if self.format_version > FORMAT_VERSION:
            raise InvalidArgumentError(
                f"{where}: format_version {self.format_version} is newer than this efficientrag "
                f"understands ({FORMAT_VERSION}); upgrade efficientrag"
            )

    def to_diff_dict(self) -> dict[str, Any]:
        """Our fields are always written, so a folder means the same under later defaults.

        Returns:
            The values ``config.json`` holds.
        """
        out = super().to_diff_dict()
        full = self.to_dict()
        for name in OWN_FIELDS:
            out[name] = full[name]
        return out


AutoConfig.register(TREEHOP_MODEL_TYPE, TreeHopConfig, exist_ok=True)
