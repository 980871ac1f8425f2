"""Errors every layer may raise, so that the lowest utilities (``jsonl``) can name bad input too.

``EfficientRAGError`` is the root of every exception the package raises: ``except
EfficientRAGError`` catches what efficientrag refused or could not do, and nothing else. Each class
also stays a subclass of the builtin it stands for (``ConfigError`` is a ``ValueError``,
``IndexNotFoundError`` a ``FileNotFoundError``), so an ``except ValueError`` keeps working. The one
exception outside it is ``eval.interrupts.RunInterrupted``, a ``BaseException`` like
``KeyboardInterrupt``, which a broad ``except Exception`` must not swallow.

``DataFormatError`` is raised by readers of files at every level, from the JSONL helpers up to the
dataset readers and the training sets; it lives here, below them all (``efficientrag.data`` offers
it among the data layer's names).
"""

from __future__ import annotations

from pathlib import Path


class EfficientRAGError(Exception):
    """The root of every error efficientrag raises."""


class InvalidArgumentError(EfficientRAGError, ValueError):
    """A value efficientrag refuses: an argument out of its domain, arguments that do not go
    together, an input a function cannot use. The message says which and what to do."""


class OperationError(EfficientRAGError, RuntimeError):
    """Something efficientrag cannot do as things stand: an optional package missing, a component
    built without what the call needs, another library answering against its contract."""


class MissingFileError(EfficientRAGError, FileNotFoundError):
    """A file or folder efficientrag needs is not there; the message names it and what makes it."""


class NotAFolderError(EfficientRAGError, NotADirectoryError):
    """A file where efficientrag needs a folder (a saved model is a folder)."""


class MissingExtraError(EfficientRAGError, ImportError):
    """An optional package a feature needs is not installed; the message names the extra to install."""


class WrongTypeError(EfficientRAGError, TypeError):
    """An argument of a kind a function cannot take (one string where it takes a list of them, an
    object without the method it calls); the message names the argument and what it takes."""


class MissingKeyError(EfficientRAGError, KeyError):
    """A key that is not there: a chunk id a corpus does not hold, a record field that is required,
    a counter nobody declared."""


class ConfigError(EfficientRAGError, ValueError):
    """A config value or key is wrong; the message names the key and where it came from."""


class DataFormatError(EfficientRAGError, ValueError):
    """Input data that cannot be used. ``str()`` names the file, the record and the field.

    Args:
        path: The file the data came from; None for data that came from memory.
        message: What is wrong, and what to do about it.
        line: The 1-based line in ``path``, for line-based files.
        record: The record's id or index, where the file has no lines (JSON arrays).
        field: The field of the record that is wrong.
    """

    def __init__(
        self,
        path: str | Path | None,
        message: str,
        *,
        line: int | None = None,
        record: str | int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.record = record
        self.field = field
        self.message = message
        where = [self.path or "<input>"]
        if line is not None:
            where.append(f"line {line}")
        if record is not None:
            where.append(f"record {record}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}")


def not_a_file(path: str | Path) -> DataFormatError:
    """The error for a path that should be a file to read and is not one.

    A folder is said to be a folder: "file not found" for a path that plainly exists sends the
    user looking for a typo that is not there.

    Args:
        path: The path given.

    Returns:
        The error to raise (a folder, or nothing there).
    """
    if Path(path).is_dir():
        return DataFormatError(
            path, "is a directory, not a file; name the file itself (e.g. DIR/corpus.jsonl)"
        )
    return DataFormatError(path, "file not found")
