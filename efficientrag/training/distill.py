"""Distillation inside the one training loop: the teacher, the student it starts, and the loss term.

With ``teacher`` set in the training config, the loop trains a student cut from the teacher
(:func:`efficientrag.models.layers.keep_layers`) and adds, to the usual hard-label loss, the
temperature-scaled divergence from the teacher's token and tag distributions on the same batch
(Hinton et al.'s knowledge distillation). The teacher runs frozen, in eval mode, on the batch the
student sees; so any row the loop trains on (synthesized, or recorded from the teacher's own
retrieval loop) carries the teacher's soft targets with no extra file.

The loss is ``hard_weight * (token CE + tag CE) + soft_weight * T^2 * (token KL + tag KL)``; the
``T^2`` keeps the soft term's gradient on the scale of the hard one's as ``T`` changes. The token KL
is averaged over the sub-words of target words (where the model's word probabilities come from),
the tag KL over rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from efficientrag.errors import InvalidArgumentError
from efficientrag.models.layers import check_layers, keep_layers, uniform_layers
from efficientrag.models.modeling import MODEL_INPUTS, LossParts
from efficientrag.models.word_classifier import WordClassifier
from efficientrag.models.wrappers import WRAPPER_CLASSES


@dataclass(frozen=True)
class DistillWeights:
    """The three settings of the loss (``distill_*`` in the training config)."""

    temperature: float = 2.0
    hard_weight: float = 1.0
    soft_weight: float = 1.0


def student_layers(teacher_depth: int, layers: list[int], depth: int) -> list[int]:
    """The teacher layers the student keeps: ``layers`` when given, else ``depth`` spread evenly.

    Raises:
        ValueError: the layers are not the teacher's, or keep all of them (see :func:`check_student_size`).
    """
    chosen = check_layers(layers, teacher_depth) if layers else []
    check_student_size(teacher_depth, layers, depth)
    return chosen or uniform_layers(depth, teacher_depth)


def check_student_size(teacher_depth: int, layers: list[int], depth: int, *, teacher: str = "") -> None:
    """Refuse a "student" with as many layers as its teacher, or more: it would be a copy of the
    teacher trained for hours to be exactly as slow (``--depth 6`` of a 6-layer model started one
    without a word).

    Args:
        teacher_depth: the teacher's layer count.
        layers: the explicit teacher layers to keep ([] when ``depth`` is used).
        depth: the student's layer count, when ``layers`` is empty.
        teacher: the teacher's folder, for the message.

    Raises:
        ValueError: the student would not be smaller than the teacher.
    """
    size = len(layers) if layers else depth
    if size < teacher_depth:
        return
    student = f"layers {list(layers)}" if layers else f"{depth} layers"
    named = f" {teacher}" if teacher else ""
    fix = (
        f"keep fewer layers (a depth of 1..{teacher_depth - 1})"
        if teacher_depth > 1
        else "a 1-layer teacher has no shallower student"
    )
    raise InvalidArgumentError(
        f"a student of {student} is no smaller than its teacher{named} ({teacher_depth} layers) and would "
        f"run exactly as slow; {fix}"
    )


def load_teacher_and_student(
    kind: str, teacher: str, layers: list[int], depth: int
) -> tuple[WordClassifier, WordClassifier]:
    """The frozen teacher (eval mode, no gradients) and a trainable student cut from it, on CPU
    (the loop moves them). Args: ``kind`` labeler/filter; ``teacher`` its folder; ``layers`` /
    ``depth`` as in :func:`student_layers`."""
    model = WRAPPER_CLASSES[kind].from_pretrained(teacher, device="cpu")
    depth_of_teacher = int(model.network.backbone.config.num_hidden_layers)
    student = keep_layers(model, student_layers(depth_of_teacher, layers, depth))
    model.network.eval().requires_grad_(False)
    return model, student


def teacher_outputs(teacher: torch.nn.Module, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The frozen teacher's logits on ``batch``."""
    with torch.no_grad():
        return teacher(**{k: batch[k] for k in MODEL_INPUTS if k in batch})


def divergence(
    student: dict[str, torch.Tensor],
    teacher: dict[str, torch.Tensor],
    batch: dict[str, torch.Tensor],
    temperature: float,
) -> torch.Tensor:
    """``T^2`` times the KL divergence from the teacher's to the student's softened distributions:
    token classes over target-word sub-words (``word_ids >= 0``), plus tag classes over rows when
    both models have a tag head. Exactly zero when the two produce the same logits."""
    counted = batch["word_ids"] >= 0
    s_tok = student["token_logits"].float()[counted] / temperature
    t_tok = teacher["token_logits"].float()[counted] / temperature
    if s_tok.numel():
        token = _kl(s_tok, t_tok)
    else:
        token = student["token_logits"].sum() * 0.0  # keeps the graph connected (DDP)
    total = token
    s_tag, t_tag = student.get("tag_logits"), teacher.get("tag_logits")
    if s_tag is not None and t_tag is not None:
        total = total + _kl(s_tag.float() / temperature, t_tag.float() / temperature)
    return total * temperature**2


def distilled_loss(
    hard: LossParts,
    student: dict[str, torch.Tensor],
    teacher: dict[str, torch.Tensor],
    batch: dict[str, torch.Tensor],
    weights: DistillWeights,
) -> LossParts:
    """``hard`` (the loop's usual loss) weighted and joined by the divergence term."""
    soft = divergence(student, teacher, batch, weights.temperature)
    total = weights.hard_weight * hard.total + weights.soft_weight * soft
    return LossParts(total=total, token=hard.token, tag=hard.tag, divergence=soft)


def _kl(student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """Mean over rows of KL(teacher || student), from logits of shape (rows, classes)."""
    return F.kl_div(
        F.log_softmax(student_logits, dim=-1),
        F.log_softmax(teacher_logits, dim=-1),
        log_target=True,
        reduction="batchmean",
    )
