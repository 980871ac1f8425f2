"""What data to load: one dataset (or the toy world), optionally pooled with further sources."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from efficientrag.data.toy_world import DEFAULT_TYPE_MIX
from efficientrag.setting_fields import bounded, check_settings


@dataclass
class ToyWorldConfig:
    """Arguments of :func:`efficientrag.data.toy_world.generate_toy_world`.

    Attributes:
        seed: Seed of the world and the questions.
        num_questions: How many questions to generate.
        paragraphs_per_question: Paragraphs given with each question, gold and distractors (>= 4).
        type_mix: Relative weights of the question types (bridge, compositional, comparison,
            bridge_comparison).
    """

    seed: int = 0
    num_questions: int = 300
    paragraphs_per_question: int = 10
    type_mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TYPE_MIX))


@dataclass
class SourceConfig:
    """One more file to pool into the same corpus (the combined pool).

    Attributes:
        dataset: As :attr:`DataConfig.dataset`.
        path: As :attr:`DataConfig.path`.
        format: As :attr:`DataConfig.format`.
        corpus_path: As :attr:`DataConfig.corpus_path`.
        limit: As :attr:`DataConfig.limit`.
        split: As :attr:`DataConfig.split`.
    """

    dataset: str = "toy"
    path: str | None = None
    format: Literal["auto", "distractor", "ircot"] = "auto"
    corpus_path: str | None = None
    # None: every question (a negative one would read as "all but the last N").
    limit: int | None = bounded(None, low=0)
    split: str = "validation"

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass
class DataConfig:
    """``dataset``: hotpotqa | 2wikimultihopqa (2wiki, 2wikimqa) | musique | jsonl | toy.

    ``path`` is the dataset file (for ``toy``: where to write the generated world, optional). For
    hotpotqa, 2wikimultihopqa and musique it may also be ``hub`` (the default Hub copy),
    ``hub:owner/name[:config]`` or a ``save_to_disk`` folder; ``split`` picks the split there.
    ``corpus_path`` is the corpus JSONL for ``jsonl``; for the other datasets an optional extra
    corpus (chunk JSONL or ``{title: text}`` JSON) pooled with the questions' paragraphs.
    ``format`` only matters for HotpotQA (auto | distractor | ircot). ``strict=False`` skips bad
    records (each listed in ``skipped``); by default one bad record fails the read, with an error
    naming every bad record of the file (the first 20, then a count).

    Attributes:
        dataset: Which reader reads ``path`` (aliases accepted).
        path: The dataset file or datasets source; None only for ``toy`` (and ``jsonl`` with a
            corpus and no questions).
        corpus_path: The corpus for ``jsonl``; an extra corpus to pool for the others.
        format: HotpotQA's file format (auto | distractor | ircot).
        limit: Read at most this many questions (None: all).
        split: The split of a Hub or ``save_to_disk`` source.
        strict: Fail on a bad record (True) or skip it (False).
        toy: The toy world's generator settings (``dataset: toy``).
        extra: Further sources pooled into the same corpus.
    """

    dataset: str = "toy"
    path: str | None = None
    corpus_path: str | None = None
    format: Literal["auto", "distractor", "ircot"] = "auto"
    # None: every question (a negative one would read as "all but the last N").
    limit: int | None = bounded(None, low=0)
    split: str = "validation"  # Hub or save_to_disk sources only
    strict: bool = True
    toy: ToyWorldConfig = field(default_factory=ToyWorldConfig)
    extra: list[SourceConfig] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_settings(self)

    def sources(self) -> list[SourceConfig]:
        """Every source to read, the main one first, so the loader treats them alike.

        Returns:
            The main dataset as a :class:`SourceConfig`, then ``extra``.
        """
        main = SourceConfig(self.dataset, self.path, self.format, self.corpus_path, self.limit, self.split)
        return [main, *self.extra]
