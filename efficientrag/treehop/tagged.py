"""TreeHop proposes, EfficientRAG's Tagger judges: the cheap combination of the two methods.

TreeHop's tree search gathers candidates without reading any text (one question encoding, then
vector updates); the Labeler's tag head then reads each (question, candidate) pair once and keeps
the ones it calls Continue, most probable first, up to a chunk budget, after the question's own
top ``floor_k`` hits (kept whatever their tag, so the result contains Direct-R@floor_k). The Labeler
sees each candidate with the *question* (there is no next-hop text); it was trained on such pairs
too (synthesis's question positives). No Filter runs, and the Labeler reads K x hops pairs per
question at most, against EfficientRAG's pairs for every hop's every query.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from efficientrag.setting_fields import SettingError, check_settings, probability
from efficientrag.text.words import split_words
from efficientrag.treehop.retriever import TreeHopResult, TreeHopRetriever


@dataclass(frozen=True)
class TagSettings:
    tag_threshold: float = probability(0.5)
    floor_k: int = 3
    chunk_budget: int = 7

    def __post_init__(self) -> None:
        check_settings(self)
        if not 0 <= self.floor_k <= self.chunk_budget or self.chunk_budget < 1:
            raise SettingError(
                f"need 0 <= floor_k <= chunk_budget and chunk_budget >= 1, got {self.floor_k}, {self.chunk_budget}"
            )


class TaggedTreeHop:
    """``retrieve_batch(questions)`` -> TreeHop results whose chunks the Tagger selected."""

    def __init__(
        self, treehop: TreeHopRetriever, labeler: Any, settings: TagSettings, *, batch_size: int = 32
    ) -> None:
        self.treehop = treehop
        self.labeler = labeler
        self.settings = settings
        self.batch_size = batch_size

    def retrieve_batch(self, questions: Sequence[str]) -> list[TreeHopResult]:
        return [res for res, _ in self.retrieve_with_tags(questions)]

    def retrieve_with_tags(self, questions: Sequence[str]) -> list[tuple[TreeHopResult, dict[str, float]]]:
        """Each result with the Continue probability of every candidate the Tagger read."""
        results = self.treehop.retrieve_batch(questions)
        pairs, owners = [], []
        for n, res in enumerate(results):
            q_words = split_words(res.question)
            for i, chunk in enumerate(res.chunks):
                if not self._floor(res, i):
                    pairs.append((q_words, split_words(chunk.contents)))
                    owners.append((n, i))
        t0 = time.perf_counter()
        preds = self.labeler.predict(pairs, batch_size=self.batch_size) if pairs else []
        seconds = time.perf_counter() - t0
        probs: dict[tuple[int, int], float] = {
            o: float(p.continue_prob) for o, p in zip(owners, preds, strict=True)
        }
        out = []
        for n, res in enumerate(results):
            keep = [i for i in range(len(res.chunks)) if self._floor(res, i)]
            judged = sorted(
                (
                    i
                    for i in range(len(res.chunks))
                    if (n, i) in probs and probs[(n, i)] >= self.settings.tag_threshold
                ),
                key=lambda i: (-probs[(n, i)], i),
            )
            keep += judged[: max(0, self.settings.chunk_budget - len(keep))]
            share = sum(1 for o in owners if o[0] == n) / max(1, len(owners))
            counters = dict(res.counters)
            counters["labeler_pairs"] = float(sum(1 for o in owners if o[0] == n))
            counters["time_model_s"] = counters.get("time_model_s", 0.0) + seconds * share
            counters["time_labeler_s"] = seconds * share
            selected = replace(
                res,
                chunks=[res.chunks[i] for i in keep],
                scores=[probs.get((n, i), 1.0) for i in keep],
                hops=[res.hops[i] for i in keep],
                counters=counters,
            )
            tags = {res.chunks[i].id: p for (m, i), p in probs.items() if m == n}
            out.append((selected, tags))
        return out

    def _floor(self, res: TreeHopResult, i: int) -> bool:
        """Among the question's own hits (hop 1, best score first), the first ``floor_k``."""
        return res.hops[i] == 1 and i < self.settings.floor_k
