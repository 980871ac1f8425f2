"""What EfficientRAG is given, checked where it comes in: the questions, and the models.

The loop takes any Labeler and Filter with a ``predict`` (:class:`LabelerLike`, :class:`FilterLike`:
scripted test doubles, remote ones) or a trained model's folder, which :func:`load_model` loads;
a :class:`DecisionObserver` sees every decision. A question that is not text, or is blank, fails
in :func:`check_questions`, which the HTTP service and the command line call too, before a batch
is run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Protocol

from efficientrag.errors import InvalidArgumentError, WrongTypeError
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.text.validity import text_problem

# Empty questions of one batch named in its error; the rest are counted.
EMPTY_QUESTIONS_SHOWN = 20


class LabelerLike(Protocol):
    """``predict`` returns objects with ``continue_prob`` and ``word_probs`` (one per chunk word)."""

    def predict(self, pairs: Sequence[tuple[list[str], list[str]]], **kw: Any) -> list[Any]: ...


class FilterLike(Protocol):
    """``predict`` returns objects with ``word_probs`` (one per input word)."""

    def predict(self, word_lists: Sequence[list[str]], **kw: Any) -> list[Any]: ...


class DecisionObserver(Protocol):
    """Sees every model decision with the position of its question in the batch: a batched run mixes
    the questions in one model call, so this is the one place a decision's question is known
    (self-training records them: ``efficientrag.adapt.self_training``)."""

    def labeled(self, question: int, query_words: list[str], chunk_words: list[str], pred: Any) -> None: ...

    def filtered(self, question: int, words: list[str], pred: Any) -> None: ...


def check_questions(questions: Sequence[object], *, source: str = "questions") -> None:
    """A question that is not text, or is blank, is a caller's mistake: an error naming it, rather than
    an empty result that reads like "nothing relevant in the corpus".

    Args:
        questions: The questions (a list, not one string).
        source: What the questions are called in the error (e.g. ``"--question"``).

    Raises:
        TypeError: ``questions`` is a single string.
        ValueError: A question is empty (whitespace and zero-width characters only), is not valid
            Unicode text, or is not a string (every empty one is named).
    """
    if isinstance(questions, str):
        raise WrongTypeError(
            f"{source}: expected a list of questions, got one string (use retrieve() for one)"
        )
    empty: list[int] = []
    for i, q in enumerate(questions):
        if not isinstance(q, str):
            where = source if len(questions) == 1 else f"{source}[{i}]"
            raise InvalidArgumentError(f"{where}: a question must be a string, got {type(q).__name__}")
        problem = text_problem(q)
        if problem == "empty":
            empty.append(i)
        elif problem is not None:
            where = source if len(questions) == 1 else f"{source}[{i}]"
            raise InvalidArgumentError(f"{where}: {problem}")
    if len(questions) == 1 and empty:
        raise InvalidArgumentError(f"{source}: the question is empty")
    if len(empty) == 1:
        raise InvalidArgumentError(f"{source}[{empty[0]}]: the question is empty")
    if empty:
        # Every empty one is named (up to EMPTY_QUESTIONS_SHOWN), so one run shows all to fix.
        shown = ", ".join(f"{source}[{i}]" for i in empty[:EMPTY_QUESTIONS_SHOWN])
        more = f" and {len(empty) - EMPTY_QUESTIONS_SHOWN} more" if len(empty) > EMPTY_QUESTIONS_SHOWN else ""
        raise InvalidArgumentError(f"{len(empty)} questions are empty: {shown}{more}")


def load_model(name: str, model: Any, config: EfficientRAGConfig) -> Any:
    """``model`` itself when it can ``predict``; a folder (str or path) loaded as the ``name`` model.

    Args:
        name: ``"labeler"`` or ``"filter"``.
        model: A loaded model, or its folder.
        config: The loop's settings (the device and inference path a folder is loaded with).

    Returns:
        The model, ready to ``predict``.

    Raises:
        TypeError: ``model`` is neither a loaded model nor a folder.
        ValueError: ``model`` is loaded and runs on another path than ``config.quantize`` asks for
            (quantization applies to a folder as it is loaded; a loaded model runs as it is, and a
            run would otherwise record one dtype and run another).
    """
    if isinstance(model, (str, os.PathLike)):
        from efficientrag.models import Filter, Labeler

        cls = Labeler if name == "labeler" else Filter
        return cls.from_pretrained(model, device=config.device).quantize(config.quantize)
    if not callable(getattr(model, "predict", None)):
        cls_name = "Labeler" if name == "labeler" else "Filter"
        raise WrongTypeError(
            f"EfficientRAG: {name} must be a loaded model ({cls_name}.from_pretrained(folder)) or its "
            f"folder, got {type(model).__name__}"
        )
    check_loaded_path(name, model, config)
    return model


def loaded_path(model: Any) -> str | None:
    """The ``quantize`` mode a loaded Labeler/Filter (or a prediction cache over one) runs as;
    None for models that do not say (test doubles, remote ones)."""
    mode = getattr(getattr(model, "model", model), "quantize_mode", None)
    return mode if isinstance(mode, str) else None


def check_loaded_path(name: str, model: Any, config: EfficientRAGConfig) -> None:
    """A loaded model runs as it was loaded: a config asking for a faster path (bf16, int8, ONNX)
    must find it already on that path, or a run would record one dtype and run another. (The
    default, ``none``, takes a loaded model as it is; runs record the path it runs on.)"""
    from efficientrag.models.export import resolve_quantize

    mode, runs_as = resolve_quantize(config.quantize, config.device), loaded_path(model)
    if mode != "none" and runs_as is not None and runs_as != mode:
        raise InvalidArgumentError(
            f"EfficientRAG: quantize={config.quantize!r} ({mode}) but the {name} given runs as quantize={runs_as!r}: "
            f"quantize applies to models loaded from folders; pass the folder, call .quantize({mode!r}) "
            f"on the loaded {name}, or set quantize to match it"
        )
