"""What the toy-world benchmarks share: the quickstart's trained models, found or refused with the
command that makes them, and a report printed and, with ``--out``, written where the docs link it.
A public interface for the scripts beside it; nothing here is measured."""

from __future__ import annotations

import shlex
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


def command_line(script: str, argv: list[str] | None = None) -> str:
    """The command that reruns a script with these arguments, as a report prints it.

    Args:
        script: The script's ``__file__``.
        argv: Its arguments (None: this process's).
    """
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python", f"benchmarks/{Path(script).name}", *(shlex.quote(a) for a in args)])


def heading(title: str, command: str, minutes: float) -> list[str]:
    """A report's first lines: its title, then the command that made it and how long it took.

    Args:
        title: The Markdown heading.
        command: The command line (:func:`command_line`).
        minutes: The run's minutes.
    """
    return [title, "", f"Command: `{command}` ({minutes:.0f} min)", ""]


def title_block(title: str, script: str) -> list[str]:
    """A toy-world report's first lines: its title, then the command that reruns it, indented as code.

    Args:
        title: The Markdown heading.
        script: The script's ``__file__`` (run with this process's arguments).
    """
    return [title, "", "    " + command_line(script), ""]


def publish(text: str, out: Path | None, rerun: str = "") -> None:
    """Print the report and, given ``out``, write it there too (the copy the docs link).

    Args:
        text: The report (Markdown).
        out: Where to write it (None: printed only).
        rerun: The command that made it (:func:`command_line`), added as the report's last line.
    """
    if rerun:
        text = f"{text}\n\nRerun: `{rerun}`"
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
