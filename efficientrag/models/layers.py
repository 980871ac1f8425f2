"""A shallower Labeler/Filter cut from a trained one: the distillation student's starting point.

On CPU almost all of EfficientRAG's time is the encoder's layers (docs/performance.md), so a model
with fewer of them is proportionally cheaper. The student keeps some of the teacher's layers (with
their weights), all of its embeddings and both heads, so it starts close to the teacher and
distillation only has to repair what the missing layers did. Its config says the smaller depth,
so the saved folder is an ordinary Labeler/Filter folder: ``from_pretrained``, the loop,
quantization and the ONNX export read it with no knowledge of where it came from.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import TypeVar

from torch import nn

from efficientrag.errors import InvalidArgumentError
from efficientrag.models.modeling import MODEL_CLASSES

M = TypeVar("M")


def uniform_layers(depth: int, teacher_depth: int) -> list[int]:
    """``depth`` of ``teacher_depth`` layer indices, spread evenly and always ending with the last.

    The heads were trained on the last layer's states, so that layer is kept; the others are the
    ones that end each of ``depth`` equal spans of the teacher (6 -> 3 keeps 1, 3, 5; 6 -> 2 keeps
    2, 5), which gives every student layer a teacher span of about the same work to stand in for.
    """
    if not 1 <= depth <= teacher_depth:
        raise InvalidArgumentError(
            f"student depth must be in 1..{teacher_depth} (the teacher's layers), got {depth}"
        )
    return [int((i + 1) * teacher_depth / depth + 0.5) - 1 for i in range(depth)]


def encoder_layer_path(backbone: nn.Module) -> str:
    """The dotted name of the backbone's list of transformer layers (``encoder.layer`` for BERT and
    DeBERTa, ``layers`` for ModernBERT): the one ``ModuleList`` as long as ``num_hidden_layers``."""
    depth = getattr(backbone.config, "num_hidden_layers", None)
    if not isinstance(depth, int) or depth < 1:
        raise InvalidArgumentError(
            f"{type(backbone.config).__name__} has no num_hidden_layers: cannot select layers"
        )
    found = [
        name
        for name, module in backbone.named_modules()
        if isinstance(module, nn.ModuleList) and len(module) == depth and re.search(r"layers?$", name)
    ]
    if len(found) != 1:
        raise InvalidArgumentError(
            f"cannot tell which module of {type(backbone).__name__} holds its {depth} layers "
            f"(candidates: {found or 'none'})"
        )
    return found[0]


def check_layers(layers: Sequence[int], teacher_depth: int) -> list[int]:
    """``layers`` as a list, refused unless increasing, distinct and inside the teacher."""
    chosen = [int(i) for i in layers]
    if not chosen:
        raise InvalidArgumentError("student_layers is empty: name at least one teacher layer to keep")
    bad = [i for i in chosen if not 0 <= i < teacher_depth]
    if bad:
        raise InvalidArgumentError(
            f"student_layers {chosen}: {bad} not in 0..{teacher_depth - 1} (the teacher's layers)"
        )
    if chosen != sorted(set(chosen)):
        raise InvalidArgumentError(
            f"student_layers {chosen} must be increasing and distinct (the teacher's order)"
        )
    return chosen


def keep_layers(model: M, layers: Sequence[int]) -> M:
    """A new model of ``model``'s kind (Labeler or Filter) whose encoder holds only ``layers``
    (teacher indices, in order), every other weight copied from ``model``; ``model`` is unchanged.

    Args:
        model: a loaded Labeler or Filter (float weights).
        layers: the teacher layers to keep, e.g. ``uniform_layers(3, 6)`` or ``[0, 2, 4]``.
    """
    network = model.network  # type: ignore[attr-defined]
    path = encoder_layer_path(network.backbone)
    teacher_depth = int(network.backbone.config.num_hidden_layers)
    chosen = check_layers(layers, teacher_depth)
    config = copy.deepcopy(network.config)
    _shrink_config(config.encoder_config, chosen, teacher_depth)
    student = MODEL_CLASSES[config.kind](config)
    student.load_state_dict(_renumbered(network.state_dict(), f"backbone.{path}.", chosen), strict=True)
    student.to(next(network.parameters()).device).train(network.training)
    return type(model)(student, model.tokenizer, student.device)  # type: ignore[call-arg]


def _shrink_config(encoder_config, chosen: list[int], teacher_depth: int) -> None:
    """The encoder config of the student: its depth, and any per-layer list (ModernBERT's
    ``layer_types``, say) cut to the kept layers."""
    for name, value in list(vars(encoder_config).items()):
        if isinstance(value, list) and len(value) == teacher_depth and name != "num_hidden_layers":
            setattr(encoder_config, name, [value[i] for i in chosen])
    encoder_config.num_hidden_layers = len(chosen)


def _renumbered(state: dict, prefix: str, chosen: list[int]) -> dict:
    """The teacher's weights under the student's names: kept layer ``chosen[j]`` becomes layer
    ``j``, dropped layers go, everything outside the layer list is kept as it is."""
    position = {teacher: student for student, teacher in enumerate(chosen)}
    out = {}
    for key, tensor in state.items():
        if not key.startswith(prefix):
            out[key] = tensor
            continue
        index, _, rest = key[len(prefix) :].partition(".")
        if int(index) in position:
            out[f"{prefix}{position[int(index)]}.{rest}"] = tensor.clone()
    return out
