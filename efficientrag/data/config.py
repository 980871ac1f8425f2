"""What data to load: one dataset (or the toy world), optionally pooled with further sources."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from efficientrag.data.toy_world import DEFAULT_TYPE_MIX


@dataclass
class ToyWorldConfig:
    """Arguments of :func:`efficientrag.data.toy_world.generate_toy_world`."""

    seed: int = 0
    num_questions: int = 300
    paragraphs_per_question: int = 10
    type_mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TYPE_MIX))


@dataclass
class SourceConfig:
    """One more file to pool into the same corpus (the combined pool)."""

    dataset: str = "toy"
    path: str | None = None
    format: Literal["auto", "distractor", "ircot"] = "auto"
    corpus_path: str | None = None
    limit: int | None = None
    split: str = "validation"


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
    """

    dataset: str = "toy"
    path: str | None = None
    corpus_path: str | None = None
    format: Literal["auto", "distractor", "ircot"] = "auto"
    limit: int | None = None
    split: str = "validation"  # Hub or save_to_disk sources only
    strict: bool = True
    toy: ToyWorldConfig = field(default_factory=ToyWorldConfig)
    extra: list[SourceConfig] = field(default_factory=list)

    def sources(self) -> list[SourceConfig]:
        main = SourceConfig(self.dataset, self.path, self.format, self.corpus_path, self.limit, self.split)
        return [main, *self.extra]
