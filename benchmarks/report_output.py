"""What the toy-world benchmarks share: the quickstart's trained models, found or refused with the
command that makes them, and a report printed and, with ``--out``, written where the docs link it.
A public interface for the scripts beside it; nothing here is measured."""

from __future__ import annotations

import sys
from pathlib import Path

QUICKSTART_HINT = "run `efficientrag quickstart`, or pass --models"


def quickstart_models(models: Path) -> tuple[Path, Path]:
    """The Labeler and Filter folders under ``models`` (``labeler/best``, ``filter/best``); the
    script exits naming the missing one and how to make it.

    Args:
        models: The folder holding them (the quickstart's ``runs/quickstart/models``).
    """
    labeler, filter_ = models / "labeler" / "best", models / "filter" / "best"
    for folder in (labeler, filter_):
        if not (folder / "model.safetensors").is_file():
            sys.exit(f"{folder}: no trained model ({QUICKSTART_HINT})")
    return labeler, filter_


def publish(text: str, out: Path | None) -> None:
    """Print the report and, given ``out``, write it there too (the copy the docs link).

    Args:
        text: The report (Markdown).
        out: Where to write it (None: printed only).
    """
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
