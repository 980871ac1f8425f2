"""What ``--dataset``, ``--data`` and ``--corpus`` mean beside a preset, and where their runs go.

The data flags always win over a preset's data section: ``-c milvus.yaml --corpus my.jsonl``
reads ``my.jsonl``, never the preset's dataset (a preset without a data section means the toy
world, which once silently won). A combination that cannot mean anything is refused in one line.

Runs over a user's own files go to a folder of their own (:func:`efficientrag.experiment.prepared_data.default_work_dir`).
"""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.data.config import DataConfig
from efficientrag.errors import ConfigError

# Datasets whose questions come from a file (``--data``); the toy world generates its own.
_GENERATED = "toy"


@dataclass(frozen=True)
class DataFlags:
    """The data flags a command was given (None: not given)."""

    dataset: str | None = None
    data: str | None = None
    corpus: str | None = None

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.dataset, self.data, self.corpus))


def data_flag_overrides(flags: DataFlags, preset: DataConfig, *, needs_questions: bool) -> list[str]:
    """``key=value`` overrides that make the data flags win over ``preset`` (the data section the
    preset and the command's own ``key=value`` overrides give).

    Args:
        flags: the data flags given on the command line.
        preset: the data section without the flags.
        needs_questions: the command evaluates or trains on questions (a corpus alone is not enough).

    Returns:
        Overrides for ``data.*``; empty when no data flag was given.

    Raises:
        ConfigError: a combination that cannot mean anything, in one line.
    """
    if not flags.given:
        return []
    dataset = flags.dataset or _inferred_dataset(flags, preset)
    if dataset == _GENERATED and flags.corpus:
        raise ConfigError(
            "--corpus cannot be used with the toy world (it generates its own corpus): "
            "use --dataset jsonl --data QUESTIONS --corpus CORPUS, or --corpus alone to ask your corpus"
        )
    out = [f"data.dataset={dataset}"]
    changed = dataset != preset.dataset
    if flags.data is not None:
        out.append(f"data.path={flags.data}")
    elif changed:
        out.append("data.path=null")  # the preset's file belongs to its own dataset
    if flags.corpus is not None:
        out.append(f"data.corpus_path={flags.corpus}")
    elif changed:
        out.append("data.corpus_path=null")
    if changed:
        out.append("data.extra=[]")  # more sources pooled into the preset's corpus, not into yours
    path = flags.data if flags.data is not None else (None if changed else preset.path)
    if needs_questions and dataset == "jsonl" and not path:
        raise ConfigError(
            "this command needs questions: add --data QUESTIONS.jsonl (with --corpus CORPUS.jsonl); "
            "a corpus alone is enough for `index` and `retrieve`"
        )
    return out


def _inferred_dataset(flags: DataFlags, preset: DataConfig) -> str:
    """The dataset when ``--dataset`` is not given. ``--corpus`` means the user's own documents
    (``jsonl``: ``--data`` is then their question file); ``--data`` alone is a file of the preset's
    dataset, unless that is the toy world, which reads no files. (To pool an extra corpus into a
    benchmark file's paragraphs, name the dataset: ``--dataset hotpotqa --data F --corpus C``.)"""
    if flags.corpus is not None:
        return "jsonl"
    if preset.dataset != _GENERATED:
        return preset.dataset
    raise ConfigError(
        f"--data {flags.data} needs --dataset (hotpotqa | 2wikimultihopqa | musique | jsonl): "
        "the preset's data is the toy world, which generates its own questions"
    )
