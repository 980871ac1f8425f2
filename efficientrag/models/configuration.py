"""The ``transformers`` configs of the two model kinds: what ``config.json`` of a saved model holds.

One config class per model, each with its own ``model_type``, so ``AutoConfig``/``AutoModel`` resolve a
saved folder to the right class with ``trust_remote_code`` off (the classes are registered when
``efficientrag`` is imported; see :mod:`efficientrag.models.autoregister`). The backbone's full config is
nested as ``encoder_config``: loading rebuilds the encoder with ``from_config`` and never downloads it.
(The name avoids ``backbone_config``, which ``transformers`` reserves for vision backbones.)
"""

from __future__ import annotations

from typing import Any, ClassVar

from transformers import AutoConfig, PreTrainedConfig
from transformers.configuration_utils import SubConfigSpec

from efficientrag.errors import InvalidArgumentError, WrongTypeError
from efficientrag.models.inputs import KINDS, TAGS

POOLINGS = ("mean", "first", "pair")  # tag-head pooling (Labeler)
WORD_AGGREGATIONS = ("first", "mean", "max")  # sub-word probabilities -> one per word
TOKEN_LABELS = {"labeler": ("useless", "useful"), "filter": ("drop", "keep")}

FORMAT_VERSION = 2
LABELER_MODEL_TYPE = "efficientrag_labeler"
FILTER_MODEL_TYPE = "efficientrag_filter"

# Our own fields: always written to config.json, even at their defaults, so a folder means the same
# thing under a later efficientrag whose defaults differ.
OWN_FIELDS = (
    "encoder_name",
    "pooling",
    "max_length",
    "word_aggregation",
    "dropout",
    "token_labels",
    "tag_labels",
    "format_version",
)


class WordClassifierConfig(PreTrainedConfig):
    """Shared fields; use :class:`LabelerConfig` or :class:`FilterConfig`.

    Attributes:
        encoder_config: The backbone's full config (nested, so loading never downloads it).
        encoder_name: The name or path the backbone was loaded from (shown in the model card).
        pooling: What the Labeler's tag head reads: ``"mean"`` of the token states (the paper),
            the ``"first"`` token (the official code) or ``"pair"`` (query and chunk means apart).
        max_length: Input length in tokens the model was trained with (inference default; >= 8).
        word_aggregation: How sub-word probabilities become one per word: ``"first"``, ``"mean"``
            or ``"max"``.
        dropout: Dropout before the heads, in [0, 1).
        token_labels: The token head's two class names (None: the kind's, useless/useful or drop/keep).
        tag_labels: The tag head's two class names (None: continue/terminate for the Labeler, none
            for the Filter).
        format_version: The save format the folder was written in.
    """

    kind: ClassVar[str] = ""
    sub_configs_defaults: ClassVar[dict[str, Any]] = {
        "encoder_config": SubConfigSpec(config_class=AutoConfig, model_type="bert", optional=True)
    }

    encoder_config: dict | PreTrainedConfig | None = None
    encoder_name: str = ""
    pooling: str = "mean"
    max_length: int = 384
    word_aggregation: str = "first"
    dropout: float = 0.1
    token_labels: list[str] | None = None
    tag_labels: list[str] | None = None
    format_version: int = FORMAT_VERSION

    def __post_init__(self, **kwargs: Any) -> None:
        if self.kind not in KINDS:
            raise WrongTypeError(f"{type(self).__name__} is abstract: use LabelerConfig or FilterConfig")
        if isinstance(self.encoder_config, dict) and "model_type" not in self.encoder_config:
            raise InvalidArgumentError(f"{self.model_type} config: 'encoder_config' has no 'model_type'")
        if self.token_labels is None:
            self.token_labels = list(TOKEN_LABELS[self.kind])
        if self.tag_labels is None:
            self.tag_labels = list(TAGS) if self.kind == "labeler" else []
        # Token classes double as the standard label maps, so pipelines and model cards can name them.
        kwargs.setdefault("id2label", dict(enumerate(self.token_labels)))
        kwargs.setdefault("label2id", {name: i for i, name in enumerate(self.token_labels)})
        super().__post_init__(**kwargs)
        self._check()

    def _check(self) -> None:
        where = f"{self.model_type} config"
        if self.pooling not in POOLINGS:
            raise InvalidArgumentError(f"{where}: 'pooling' must be one of {POOLINGS}, got {self.pooling!r}")
        if self.word_aggregation not in WORD_AGGREGATIONS:
            raise InvalidArgumentError(
                f"{where}: 'word_aggregation' must be one of {WORD_AGGREGATIONS}, got {self.word_aggregation!r}"
            )
        if not isinstance(self.max_length, int) or self.max_length < 8:
            raise InvalidArgumentError(
                f"{where}: 'max_length' must be an integer >= 8, got {self.max_length!r}"
            )
        if not 0.0 <= float(self.dropout) < 1.0:
            raise InvalidArgumentError(f"{where}: 'dropout' must be in [0, 1), got {self.dropout!r}")
        if len(self.token_labels or []) != 2:
            raise InvalidArgumentError(f"{where}: 'token_labels' needs 2 names, got {self.token_labels!r}")
        if self.has_tag_head and len(self.tag_labels or []) != 2:
            raise InvalidArgumentError(f"{where}: 'tag_labels' needs 2 names, got {self.tag_labels!r}")
        if self.format_version > FORMAT_VERSION:
            raise InvalidArgumentError(
                f"{where}: format_version {self.format_version} is newer than this efficientrag "
                f"understands ({FORMAT_VERSION}); upgrade efficientrag"
            )

    @property
    def has_tag_head(self) -> bool:
        """Whether this kind has the Continue/Terminate head (the Labeler does)."""
        return self.kind == "labeler"

    def to_diff_dict(self) -> dict[str, Any]:
        """``save_pretrained`` writes only values that differ from the defaults; ours and the encoder's
        are written in full (see ``OWN_FIELDS``).

        Returns:
            The values ``config.json`` holds.
        """
        out = super().to_diff_dict()
        full = self.to_dict()
        for name in (*OWN_FIELDS, "encoder_config"):
            out[name] = full[name]
        return out


class LabelerConfig(WordClassifierConfig):
    """The saved config of a Labeler/Tagger (``model_type`` ``efficientrag_labeler``)."""

    model_type = LABELER_MODEL_TYPE
    kind: ClassVar[str] = "labeler"


class FilterConfig(WordClassifierConfig):
    """The saved config of a Filter (``model_type`` ``efficientrag_filter``)."""

    model_type = FILTER_MODEL_TYPE
    kind: ClassVar[str] = "filter"


# Every table keyed by kind is built from the classes, which name their kind once.
CONFIG_CLASSES: dict[str, type[WordClassifierConfig]] = {
    cls.kind: cls for cls in (LabelerConfig, FilterConfig)
}
MODEL_TYPES: dict[str, str] = {cls.model_type: kind for kind, cls in CONFIG_CLASSES.items()}


def register_configs() -> None:
    """Make ``AutoConfig`` read our ``config.json`` files (idempotent)."""
    for cls in CONFIG_CLASSES.values():
        AutoConfig.register(cls.model_type, cls, exist_ok=True)


register_configs()
