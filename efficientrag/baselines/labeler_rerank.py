"""The trained Labeler as a reranker: one hop, no Filter.

The Labeler/Tagger is itself a cross-encoder over (query, chunk) pairs: its tag head's Continue
probability says whether the chunk helps the query. Ranking the question's top ``top_n`` hits by it
shows what the Labeler alone gives without the loop, so a comparison can tell the hops' share of
EfficientRAG's gain from the reranking's. Everything else (the ranked list, the counters, the
answer call) is :class:`~efficientrag.baselines.rerank.Rerank`'s.

Importing this module (the registry does) imports neither torch nor spaCy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from efficientrag.baselines.rerank import RankFusion, Rerank
from efficientrag.data.schema import Chunk
from efficientrag.errors import InvalidArgumentError
from efficientrag.setting_fields import ANSWER_ONLY, SPEED_ONLY, bounded


@dataclass
class LabelerRerankConfig(RankFusion):
    """``labeler_rerank``: the question's top ``top_n`` hits, ranked by the Labeler's Continue probability.

    Attributes:
        labeler: The trained Labeler folder (``efficientrag train labeler``'s best/).
        top_n: Hits of the question's search that are ranked.
        batch_size: Pairs per forward pass.
        max_length: The Labeler's input length (None: the length it was trained with).
        device: ``"cpu"``, ``"cuda"``... (None: CUDA when available).
        quantize: The Labeler's inference path, as the loop's ``quantize`` (``"bf16"``, ``"int8"``;
            ``"none"``: float32), so the two are timed at one dtype.
        top_k: With ``eval.answer=true``: the chunks the answer call reads.
        max_new_tokens: With ``eval.answer=true``: the answer call's budget.

    With ``fusion="rrf"`` the Labeler's order is fused with the search's (:class:`RankFusion`).
    """

    labeler: str = ""
    top_n: int = bounded(20, low=1)
    batch_size: int = bounded(32, low=1, roles=[SPEED_ONLY])
    max_length: int | None = bounded(None, low=8)
    device: str | None = None
    quantize: Literal["none", "int8", "bf16"] = "none"
    top_k: int = bounded(6, low=1, roles=[ANSWER_ONLY])
    max_new_tokens: int = bounded(128, low=1, roles=[ANSWER_ONLY])


class LabelerRerank(Rerank):
    name = "labeler_rerank"
    config_class = LabelerRerankConfig
    cfg: LabelerRerankConfig  # type: ignore[assignment]
    model_fields: ClassVar[dict[str, str]] = {"labeler": "labeler"}

    def load_scorer(self) -> Any:
        """The Labeler of ``cfg.labeler``, on the ``quantize`` path (float32 by default, as the loop's
        default runs it)."""
        from efficientrag.models import Labeler

        if not self.cfg.labeler:
            raise InvalidArgumentError(
                f"{self.section_key()}.labeler is empty: set it to a trained Labeler folder "
                "(`efficientrag train labeler` writes one to its output_dir/best)"
            )
        return Labeler.from_pretrained(self.cfg.labeler, device=self.cfg.device).quantize(self.cfg.quantize)

    def score(self, pairs: Sequence[tuple[str, Chunk]]) -> list[float]:
        """The Labeler's Continue probability of each (question, chunk) pair, read as the loop reads
        its first hop: the question's words against the chunk's words.

        Args:
            pairs: The pairs of every question of the batch.

        Returns:
            One probability per pair, in the order of ``pairs``.
        """
        from efficientrag.text.words import split_words_batch  # spaCy: only once a run scores

        if not pairs:
            return []
        questions = split_words_batch([question for question, _ in pairs])
        chunks = split_words_batch([chunk.contents for _, chunk in pairs])
        words = list(zip(questions, chunks, strict=True))
        predictions = self.scorer.predict(
            words, batch_size=self.cfg.batch_size, max_length=self.cfg.max_length
        )
        return [float(p.continue_prob) for p in predictions]
