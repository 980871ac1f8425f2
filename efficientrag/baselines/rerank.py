"""Retrieve-then-rerank: what a practitioner puts in front of an LLM instead of a hop loop.

The question's top ``top_n`` hits from the run's search are scored by a cross-encoder (trained with
sentence-transformers' ``CrossEncoder`` on the same training questions as the Labeler: ``efficientrag
train reranker``) and sorted by that score. The result is one ranked list, scored like Direct-R's at
every cut-off K of ``eval.ks``, so one run gives "rerank@K" for every K at the cost of one search
and ``top_n`` pair scorings per question. This is the bar the hop loop must clear at equal chunks:
it shows how much of a gain comes from reranking alone, and how much only the hops find (evidence
outside the question's own top N). With ``eval.answer=true`` one answer call reads the top ``top_k``.

:class:`~efficientrag.baselines.labeler_rerank.LabelerRerank` is the same method with the trained
Labeler's Continue probability as the score.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from efficientrag.baselines.answering import answer_if_asked
from efficientrag.baselines.base import Counters, Method, Prediction
from efficientrag.baselines.settings import Settings
from efficientrag.data.schema import Chunk, Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.setting_fields import ANSWER_ONLY, SPEED_ONLY, bounded, quiet_at_default


@dataclass
class RankFusion(Settings):
    """How a reranker's order is fused with the search's, as deployed rerankers often are.

    Attributes:
        fusion: ``"none"``: the reranker's score alone; ``"rrf"``: reciprocal rank fusion of the
            search's rank and the reranker's, ``1 / (rrf_k + 1 + rank)`` each, so a reranker that
            knows less than its search cannot bury the search's best hits.
        rrf_k: The fusion's damping constant (60, the usual value).
    """

    fusion: Literal["none", "rrf"] = "none"
    rrf_k: int = bounded(60, low=1)


@dataclass
class RerankConfig(RankFusion):
    """``rerank``: the question's top ``top_n`` hits, reranked by a cross-encoder.

    Attributes:
        model: The cross-encoder folder (``output_dir/best`` of ``efficientrag train reranker``, or
            any saved ``CrossEncoder``), a pretrained one's Hub id
            (``cross-encoder/ms-marco-MiniLM-L-6-v2``), read from the Hub cache when offline, or a
            FlashRank model, ``flashrank:<name>`` (``flashrank:ms-marco-MiniLM-L-12-v2``; the
            flashrank extra, :mod:`efficientrag.models.flashrank`).
        top_n: Hits of the question's search that are reranked (the rest are never returned).
        batch_size: Pairs per forward pass.
        max_length: Tokens per (question, chunk) pair; longer pairs are cut.
        device: ``"cpu"``, ``"cuda"``... (None: CUDA when available).
        quantize: ``"bf16"`` casts the cross-encoder to bfloat16, as the loop's ``quantize=bf16``
            casts its models, so the two are timed at one dtype; ``"none"``: float32.
        top_k: With ``eval.answer=true``: the chunks the answer call reads.
        max_new_tokens: With ``eval.answer=true``: the answer call's budget.
        exit_threshold: A pair whose upper estimate of the cross-encoder's score (by the exit
            heads in the model folder's ``early_exit/``, ``efficientrag train exit-head
            --cross-encoder``) is below this leaves at that early layer with the estimate as its
            score (:mod:`efficientrag.models.cross_encoder_exit`); None: every pair in full.
    """

    model: str = ""
    top_n: int = bounded(20, low=1)
    batch_size: int = bounded(64, low=1, roles=[SPEED_ONLY])
    max_length: int = bounded(256, low=8)
    device: str | None = None
    quantize: Literal["none", "bf16"] = "none"
    top_k: int = bounded(6, low=1, roles=[ANSWER_ONLY])
    max_new_tokens: int = bounded(128, low=1, roles=[ANSWER_ONLY])
    exit_threshold: float | None = quiet_at_default(None, low=0.0, high=1.0)


class Rerank(Method):
    """Search once, score the ``top_n`` hits of every question in one batch, sort by the score."""

    name = "rerank"
    config_class = RerankConfig
    cfg: RerankConfig
    retrieval_only = True
    # The settings that name model folders (field -> kind): their content is hashed into runs.
    model_fields: ClassVar[dict[str, str]] = {"model": "reranker"}

    # The cross-encoder's exit heads and their digest (what a run records), when the exit is on.
    early_exit: Any = None
    heads_digest: str | None = None
    depth = 0  # the cross-encoder's encoder layers, read with the heads

    def setup(self) -> None:
        if self.retriever is None:
            raise InvalidArgumentError(f"{self.name} needs a retriever: it reranks the question's own hits")
        self.scorer = self.load_scorer()
        if getattr(self.cfg, "exit_threshold", None) is not None:
            self.early_exit, self.heads_digest = self.load_exit_heads()

    def load_exit_heads(self) -> tuple[Any, str]:
        """The exit heads saved in the cross-encoder's folder, checked to be its own and to split it."""
        from efficientrag.models.cross_encoder import check_cross_encoder_folder
        from efficientrag.models.cross_encoder_exit import check_cross_encoder_split
        from efficientrag.models.early_exit import early_exit_digest, load_early_exit
        from efficientrag.models.flashrank import FlashRankScorer

        where = f"{self.section_key()}.exit_threshold"
        if isinstance(self.scorer, FlashRankScorer):
            raise InvalidArgumentError(
                f"{where}: a FlashRank model runs whole on ONNX Runtime; no early exit"
            )
        import torch

        activation = getattr(self.scorer, "activation_fn", None)
        if not isinstance(activation, torch.nn.Sigmoid):
            raise InvalidArgumentError(
                f"{where}: the threshold is a probability; this cross-encoder's scores are not "
                f"(its activation is {type(activation).__name__})"
            )
        folder = check_cross_encoder_folder(self.cfg.model)
        heads = load_early_exit(folder, device=self.scorer.device)
        check_cross_encoder_split(self.scorer, heads.layers)
        self.depth = int(self.scorer.model.config.num_hidden_layers)
        return heads, early_exit_digest(folder)

    def load_scorer(self) -> Any:
        """The model that scores (question, chunk) pairs: here the cross-encoder of ``cfg.model``, or
        the FlashRank model it names (``flashrank:<name>``)."""
        from efficientrag.models.cross_encoder import load_cross_encoder
        from efficientrag.models.flashrank import FlashRankScorer, flashrank_model

        if not self.cfg.model:
            raise InvalidArgumentError(
                f"{self.section_key()}.model is empty: set it to a cross-encoder folder "
                "(`efficientrag train reranker` writes one to its output_dir/best)"
            )
        name = flashrank_model(self.cfg.model)
        if name is not None:
            if self.cfg.quantize != "none":
                raise InvalidArgumentError(
                    f"{self.section_key()}.quantize={self.cfg.quantize} casts a torch cross-encoder; "
                    "FlashRank models run on ONNX Runtime at their own precision: set it to none"
                )
            return FlashRankScorer(name, max_length=self.cfg.max_length)
        return load_cross_encoder(
            self.cfg.model, device=self.cfg.device, max_length=self.cfg.max_length, quantize=self.cfg.quantize
        )

    def score(self, pairs: Sequence[tuple[str, Chunk]]) -> list[float]:
        """One score per (question, chunk) pair, higher meaning more useful to the question.

        Args:
            pairs: The pairs of every question of the batch.

        Returns:
            The cross-encoder's scores, in the order of ``pairs``.
        """
        from efficientrag.models.cross_encoder import score_pairs
        from efficientrag.models.flashrank import FlashRankScorer

        inputs = [(question, chunk.contents) for question, chunk in pairs]
        if isinstance(self.scorer, FlashRankScorer):
            return self.scorer.score(inputs)
        return score_pairs(self.scorer, inputs, batch_size=self.cfg.batch_size)

    def score_with_exits(self, pairs: Sequence[tuple[str, Chunk]]) -> tuple[list[float], list[int | None]]:
        """Each pair's score and the encoder layer it left at: through the exit heads when
        ``exit_threshold`` is set, else :meth:`score`'s with every pair judged in full (None).

        Args:
            pairs: The pairs of every question of the batch.
        """
        from efficientrag.models.cross_encoder_exit import score_with_exit

        if self.early_exit is None:
            return self.score(pairs), [None] * len(pairs)
        judged = score_with_exit(
            self.scorer,
            self.early_exit,
            [(question, chunk.contents) for question, chunk in pairs],
            exit_below=float(self.cfg.exit_threshold),
            batch_size=self.cfg.batch_size,
        )
        return [s for s, _ in judged], [layer for _, layer in judged]

    def run_batch(self, examples: Sequence[Example]) -> list[Prediction]:
        questions = [ex.question for ex in examples]
        start = time.perf_counter()
        hits = self.retriever.search(questions, self.cfg.top_n)  # type: ignore[union-attr]
        searched = time.perf_counter()
        pairs = [(q, h.chunk) for q, hs in zip(questions, hits, strict=True) for h in hs]
        judged, left_at = self.score_with_exits(pairs)
        scores, exits = iter(judged), iter(left_at)
        scored = time.perf_counter()
        n = max(1, len(examples))
        out = []
        for ex, hs in zip(examples, hits, strict=True):
            order, own = ranked_order([next(scores) for _ in hs], self.cfg.fusion, self.cfg.rrf_k)
            counters = Counters(
                retrieval_calls=1,
                reranked_pairs=len(hs),
                time_retrieval_s=(searched - start) / n,
                time_rerank_s=(scored - searched) / n,
            )
            if self.early_exit is not None:
                left = [next(exits) for _ in hs]
                counters["exited_pairs"] = sum(layer is not None for layer in left)
                # The cost an exit saves: each pair's encoder layers, its exit's or the whole depth.
                counters["encoder_layers"] = sum(layer or self.depth for layer in left)
            out.append(
                Prediction(
                    example_id=ex.id,
                    chunks=[hs[i].chunk for i in order],
                    scores=own,
                    ranked=True,
                    trace={"search_rank": order, "search_scores": [hs[i].score for i in order]},
                    counters=counters,
                )
            )
        return answer_if_asked(
            self, examples, out, top_k=self.cfg.top_k, max_new_tokens=self.cfg.max_new_tokens
        )


def ranked_order(scores: Sequence[float], fusion: str, rrf_k: int) -> tuple[list[int], list[float]]:
    """The hits' indices best first, and each one's final score in that order: the reranker's
    ``scores`` (hit ``i`` at search rank ``i``) alone, or fused with the search's order
    (``fusion="rrf"``). Equal scores keep the search's order.

    Args:
        scores: The reranker's score of each hit, in the search's order.
        fusion: ``"none"`` or ``"rrf"`` (:class:`RankFusion`).
        rrf_k: The fusion's damping constant.
    """
    own = list(scores)
    order = sorted(range(len(own)), key=lambda i: (-own[i], i))
    if fusion == "rrf":
        own = fused_ranks(order, rrf_k)
        order = sorted(range(len(own)), key=lambda i: (-own[i], i))
    return order, [own[i] for i in order]


def fused_ranks(order: Sequence[int], k: int) -> list[float]:
    """Reciprocal rank fusion of the search's order (hit ``i`` at rank ``i``) and the reranker's
    (``order``: hit indices best first): ``1 / (k + 1 + search rank) + 1 / (k + 1 + reranker rank)``
    per hit, in the search's order.

    Args:
        order: The hits' indices in the reranker's order.
        k: The damping constant.
    """
    reranked = {hit: rank for rank, hit in enumerate(order)}
    return [1.0 / (k + 1 + i) + 1.0 / (k + 1 + reranked[i]) for i in range(len(order))]
