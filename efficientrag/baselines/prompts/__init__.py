"""Every method's prompts and exemplars.

The answering methods (Direct, CoT, Direct-R, Decompose-R, Iter-RetGen, Self-Ask, and the answer
call of EfficientRAG) share instructions (:mod:`.instructions`) and three exemplars per dataset
family (:mod:`.hotpotqa`, :mod:`.twowiki`, :mod:`.musique`, :mod:`.toy`, :mod:`.generic`):
``PromptLibrary(PromptConfig).for_example(ex)`` picks the family from the question's dataset (or
the configured one) and returns a :class:`PromptSet` with one builder per prompt kind. The active
methods (FLARE, DRAGIN, wo/SR/FL/FS-RAG) continue one plain-text layout (:mod:`.continuation`) after
eight chain-of-thought exemplars per dataset (:mod:`.cot_exemplars`).
"""

from __future__ import annotations

from efficientrag.baselines.prompts import generic, hotpotqa, musique, toy, twowiki
from efficientrag.baselines.prompts.config import PromptConfig
from efficientrag.baselines.prompts.exemplar import Exemplar
from efficientrag.baselines.prompts.render import PromptSet, format_documents
from efficientrag.data.schema import Example

EXEMPLARS: dict[str, tuple[Exemplar, ...]] = {
    "hotpotqa": hotpotqa.EXEMPLARS,
    "2wikimultihopqa": twowiki.EXEMPLARS,
    "musique": musique.EXEMPLARS,
    "toy": toy.EXEMPLARS,
    "generic": generic.EXEMPLARS,
}


class PromptLibrary:
    def __init__(self, cfg: PromptConfig | None = None) -> None:
        self.cfg = cfg or PromptConfig()
        self._sets = {key: PromptSet(key, exs[: self.cfg.exemplars]) for key, exs in EXEMPLARS.items()}

    def family(self, dataset: str) -> str:
        """The exemplar family for a dataset name; unknown datasets get the generic exemplars."""
        if self.cfg.dataset != "auto":
            return self.cfg.dataset
        return dataset if dataset in self._sets else "generic"

    def for_dataset(self, dataset: str) -> PromptSet:
        return self._sets[self.family(dataset)]

    def for_example(self, ex: Example) -> PromptSet:
        return self.for_dataset(ex.dataset)


__all__ = ["EXEMPLARS", "Exemplar", "PromptLibrary", "PromptSet", "format_documents"]
