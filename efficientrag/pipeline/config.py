"""Settings of the EfficientRAG retrieval loop."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from efficientrag.setting_fields import (
    ANSWER_ONLY,
    EXPOSED_OVER_HTTP,
    REPLAYABLE,
    RESET_FOR_RERANKER,
    SPEED_ONLY,
    SettingError,
    bounded,
    check_settings,
    probability,
    quiet_at_default,
    setting,
    settings_with,
)

# The same modes as efficientrag.models.export.QUANTIZE_MODES (a test keeps them equal); spelled
# out here so loading a config does not import torch.
QuantizeMode = Literal["none", "int8", "bf16", "onnx", "onnx-int8", "auto"]


@dataclass
class EfficientRAGConfig:
    """Defaults follow the official inference script where it has one (top-k 10, 4 hops). Input
    lengths default to the length each model was trained with (recorded in its saved folder): the
    official script infers the Filter at 128 tokens after training it at 256, a mismatch we do not
    copy.

    Attributes:
        labeler: Folder of the trained Labeler (``EfficientRAG.from_config`` loads it).
        filter: Folder of the trained Filter.
        top_k: Hits retrieved per query and hop.
        first_top_k: Hits of the question's own search at the first hop (None: ``top_k``). A wider
            first hop lets the Labeler rank more of the question's hits, as a reranker would; later
            hops stay at ``top_k``.
        first_hop_reranker: A cross-encoder folder (``efficientrag train reranker``'s best/, or any
            saved ``CrossEncoder``) that reorders the question's ``first_top_k`` hits before the
            Labeler judges the best ``top_k`` of them (None: the search's own order). The floor then
            keeps the reranker's top ``floor_k``; later hops are not reranked.
        max_hops: Hops at most per question.
        query_mode: ``"merged"``: one next query per question and hop from all its Continue chunks
            (the official code); ``"branch"``: one per Continue chunk (the paper's Figure 3).
        max_branches: In ``"branch"`` mode, next queries per question and hop at most (the most
            probable Continue chunks first).
        tag_threshold: Continue probability at or above which a chunk is tagged Continue (kept).
        token_threshold: Probability at or above which the Labeler marks a chunk word useful.
        filter_threshold: Probability at or above which the Filter keeps a word in the next query.
        chunk_budget: Chunks per question at most (None: no budget).
        budget_policy: ``"first"``: stop adding once the budget is full; ``"best"``: run the loop
            and keep the floor chunks, then the most probable Continue chunks; ``"rerank"``: run
            the loop and keep the floor chunks, then the best-scored chunks the Labeler judged at
            any hop, so the first hop is ``labeler_rerank`` of the question's hits and a later
            hop's chunk enters only by outscoring the lowest kept one. The first hop's hits past
            ``top_k`` are judged for the budget only: the hops start from the search's top
            ``top_k``, as they would without ``first_top_k``.
        floor_k: The first hop's top ``floor_k`` hits are kept whatever their tag (0: off).
        fill_budget: Fill a question's unspent ``chunk_budget`` (with what ``fill_from`` names).
        fill_from: What ``fill_budget`` fills with: ``"first_hits"``, the question's next-ranked
            first-hop hits; ``"labeled"``, the most probable other chunks the Labeler judged at any
            hop.
        rank_weight: Added to a chunk's Continue probability where the budget ranks chunks ("best",
            and ``fill_from="labeled"``): ``rank_weight / (1 + its best rank in any query's hits)``,
            so the search's own order breaks the Labeler's near-ties (0: the probability alone).
        hop_calibration: Per hop, ``[a, b]`` or ``[a, b, c]`` mapping a Continue probability ``p``
            judged at that hop, at rank ``r`` of its query's hits, to
            ``sigmoid(a * logit(p) + b + c * log(1 + r))`` where the budget ranks chunks; the last
            entry serves every deeper hop (None: the probability itself). Fitted on validation
            traces by :func:`efficientrag.pipeline.calibration.fit_hop_calibration`.
        pair_budget: Labeler pairs per question at most, the first hop's included (None: no
            bound): a later hop judges only what is left of it, in its hits' rank order.
        exit_threshold: A Labeler pair whose upper estimate of its Continue probability (by an
            exit head after an early layer) is below this leaves the Labeler at the first such
            layer, tagged Terminate with no words labelled; its expected estimate is its score
            where the budget ranks chunks (None: every pair is judged in full). Needs exit heads
            beside the Labeler (``efficientrag train exit-head``).
        answer_top_k: Kept chunks the one answer call reads (None: all of them).
        answer_max_new_tokens: Tokens the answer call writes at most.
        batch_size: Labeler/Filter inference batch size.
        labeler_max_length: The Labeler's input length in tokens (None: the length it was trained with).
        filter_max_length: The same for the Filter.
        device: Where the models run (``"cpu"``, ``"cuda"``, ...; None: a GPU when there is one).
        quantize: Labeler/Filter inference mode: ``"none"``, ``"int8"``, ``"bf16"``, ``"onnx"``,
            ``"onnx-int8"`` or ``"auto"`` (see the comment on the field).
    """

    labeler: str | None = None
    filter: str | None = None
    top_k: int = bounded(10, low=1, roles=[EXPOSED_OVER_HTTP])
    # The first hop searches the question itself: this many hits there (None: top_k). Wider, the
    # Labeler ranks more of the question's own hits (the chunk budget keeps the surest, and in branch
    # mode the next hops start from the most probable max_branches), at the cost of labeling them.
    first_top_k: int | None = bounded(None, low=1, roles=[EXPOSED_OVER_HTTP])
    # A cross-encoder reranks the question's own first_top_k hits, and the Labeler judges its best
    # top_k (the floor is its top floor_k): a retrieve-then-rerank first hop the loop hops on from.
    first_hop_reranker: str | None = setting(None, roles=[RESET_FOR_RERANKER])
    max_hops: int = bounded(4, low=1, roles=[EXPOSED_OVER_HTTP])
    # "merged": one next query per question and hop from all Continue chunks (official code);
    # "branch": one next query per Continue chunk (the paper's Figure 3), at most max_branches.
    query_mode: Literal["merged", "branch"] = setting("merged", roles=[EXPOSED_OVER_HTTP])
    max_branches: int = bounded(4, low=1, roles=[EXPOSED_OVER_HTTP])
    tag_threshold: float = probability(0.5, roles=[EXPOSED_OVER_HTTP])
    token_threshold: float = probability(0.5, roles=[EXPOSED_OVER_HTTP])
    filter_threshold: float = probability(0.5, roles=[EXPOSED_OVER_HTTP])
    # At most this many chunks per question (None: no budget). budget_policy "first" stops adding
    # once the budget is full (the loop ends early); "best" lets the loop run and keeps the
    # chunk_budget chunks with the highest Continue probability (floor chunks first).
    chunk_budget: int | None = bounded(None, low=1, roles=[EXPOSED_OVER_HTTP, REPLAYABLE])
    # "rerank" is "best" over every judged chunk, not only the Continue ones: with floor_k=0 its
    # first hop alone is labeler_rerank of the question's first_top_k hits, and a chunk that a later
    # hop judges takes a place only from a kept chunk it outscores. The hits past top_k are judged
    # for the budget only, so the hops are those of the same loop without first_top_k.
    budget_policy: Literal["first", "best", "rerank"] = setting(
        "first", roles=[EXPOSED_OVER_HTTP, REPLAYABLE]
    )
    # The first hop's top floor_k hits of the question are kept whatever their tag, so the result
    # always contains Direct-R@floor_k and the loop can only add to it (0: off). They are still
    # labeled, and spawn next-hop queries only when tagged Continue.
    floor_k: int = bounded(0, low=0, roles=[EXPOSED_OVER_HTTP, RESET_FOR_RERANKER])
    # With a chunk_budget: a question whose loop keeps fewer chunks than the budget gets the rest
    # (by default from its own first-hop hits, best ranked first, so the result holds
    # Direct-R@(floor_k + the unspent budget) beside the loop's chunks), and every question costs
    # the same number of chunks.
    fill_budget: bool = setting(False, roles=[EXPOSED_OVER_HTTP, REPLAYABLE, RESET_FOR_RERANKER])
    # What fills it: "first_hits", the question's own first-hop hits in the search's order, so the
    # result holds Direct-R's next ranks; "labeled", every other chunk the Labeler judged at any hop
    # (tagged Terminate, or cut by the budget), most probable first: its own ranking of all it read.
    fill_from: Literal["first_hits", "labeled"] = quiet_at_default(
        "first_hits", roles=[EXPOSED_OVER_HTTP, REPLAYABLE, RESET_FOR_RERANKER]
    )
    # Where the budget ranks chunks, each one's score is its Continue probability plus
    # rank_weight / (1 + its best rank in any query's hits): a chunk some query's search put first
    # gains rank_weight, one at rank 9 a tenth of it. 0: the Labeler's probability alone.
    rank_weight: float = quiet_at_default(
        0.0, low=0.0, roles=[EXPOSED_OVER_HTTP, REPLAYABLE, RESET_FOR_RERANKER]
    )
    # A later hop's query is the Filter's, not the question: the same Continue probability there
    # need not mean the same chance of gold. Per hop, [a, b] puts each probability on one scale
    # (Platt scaling, a > 0 so each hop's own order stays) before the budget compares chunks found
    # at different hops; [a, b, c] adds c * log(1 + the chunk's rank in its query's hits), the
    # search's order fused with the Labeler's. The last entry serves deeper hops. None: the raw
    # probabilities.
    hop_calibration: list[list[float]] | None = quiet_at_default(None, roles=[REPLAYABLE, RESET_FOR_RERANKER])
    # Labeler pairs per question at most, counted from the first hop; later hops judge what is left,
    # best-ranked hits first, and a question stops hopping once it is spent. None: no bound.
    pair_budget: int | None = quiet_at_default(None, low=1, roles=[EXPOSED_OVER_HTTP, RESET_FOR_RERANKER])
    # A pair the exit heads (fit on the Labeler's own outputs) are sure is below this leaves the
    # Labeler at an early layer: cheaper, and a chunk the full Labeler would keep is lost only where
    # a head errs. The reranker derived from the loop keeps it (the same scorer).
    exit_threshold: float | None = quiet_at_default(None, low=0.0, high=1.0, roles=[EXPOSED_OVER_HTTP])
    # The one answer call (``efficientrag eval`` with eval.answer=true) reads this many of the kept
    # chunks (None: every chunk the loop kept, the paper) and writes at most answer_max_new_tokens.
    answer_top_k: int | None = bounded(None, low=1, roles=[ANSWER_ONLY])
    answer_max_new_tokens: int = bounded(128, low=1, roles=[ANSWER_ONLY])

    def __post_init__(self) -> None:
        check_settings(self)
        if self.budget_policy == "rerank" and self.chunk_budget is None:
            raise SettingError(
                "budget_policy=rerank keeps the chunk_budget best-scored chunks: set a chunk_budget",
                fields=("budget_policy", "chunk_budget"),
            )
        if self.budget_policy == "rerank" and self.fill_budget:
            raise SettingError(
                "budget_policy=rerank already fills the chunk budget from every judged chunk: "
                "drop fill_budget (and fill_from)",
                fields=("budget_policy", "fill_budget"),
            )
        if self.chunk_budget is not None and self.chunk_budget < self.floor_k:
            raise SettingError(
                f"chunk_budget ({self.chunk_budget}) must be at least floor_k ({self.floor_k})",
                fields=("chunk_budget", "floor_k"),
            )
        if self.fill_budget and self.chunk_budget is None:
            raise SettingError(
                "fill_budget needs a chunk_budget (the number of chunks to fill up to)",
                fields=("fill_budget", "chunk_budget"),
            )
        if self.fill_from != "first_hits" and not self.fill_budget:
            raise SettingError(
                f"fill_from={self.fill_from!r} only applies with fill_budget=true",
                fields=("fill_from", "fill_budget"),
            )
        if self.rank_weight > 0 and not self.budget_ranks:
            raise SettingError(
                "rank_weight only applies where the chunk budget ranks chunks: set a chunk_budget with "
                "budget_policy=best or rerank, or fill_from=labeled",
                fields=("rank_weight", "chunk_budget", "budget_policy", "fill_from"),
            )
        self._check_calibration()
        if self.pair_budget is not None and self.pair_budget < self.first_hop_judged:
            raise SettingError(
                f"pair_budget ({self.pair_budget}) must cover the first hop's {self.first_hop_judged} pairs "
                "(the question's own hits, all judged)",
                fields=("pair_budget", "top_k", "first_top_k"),
            )
        if self.first_hop_reranker is not None and self.first_hop_k <= self.top_k:
            raise SettingError(
                f"first_hop_reranker picks the best top_k ({self.top_k}) of the question's first_top_k hits: "
                f"set first_top_k above top_k (got {self.first_top_k})",
                fields=("first_hop_reranker", "first_top_k", "top_k"),
            )
        if self.exit_threshold is not None and self.quantize in ("int8", "onnx", "onnx-int8"):
            raise SettingError(
                f"exit_threshold runs the Labeler's float32 or bf16 network; quantize={self.quantize!r} "
                "runs it another way: set quantize to none, bf16 or auto",
                fields=("exit_threshold", "quantize"),
            )
        if self.floor_k > self.first_hop_judged:
            which = (
                "first_top_k" if self.first_top_k is not None and self.first_hop_reranker is None else "top_k"
            )
            raise SettingError(
                f"floor_k ({self.floor_k}) cannot exceed the first hop's hits ({which}={self.first_hop_judged})",
                fields=("floor_k", which),
            )

    def _check_calibration(self) -> None:
        if self.hop_calibration is None:
            return
        if not self.budget_ranks:
            raise SettingError(
                "hop_calibration only applies where the chunk budget ranks chunks: set a chunk_budget "
                "with budget_policy=best or rerank, or fill_from=labeled",
                fields=("hop_calibration", "chunk_budget", "budget_policy", "fill_from"),
            )
        if not self.hop_calibration:
            raise SettingError(
                "hop_calibration needs one [a, b] or [a, b, c] entry per hop (or null: none)",
                fields=("hop_calibration",),
            )
        for h, entry in enumerate(self.hop_calibration):
            ok = len(entry) in (2, 3) and all(isinstance(x, (int, float)) and math.isfinite(x) for x in entry)
            if not ok or entry[0] <= 0:
                raise SettingError(
                    f"hop_calibration[{h}] must be [a, b] or [a, b, c] with finite numbers and a > 0 (the "
                    f"Labeler's order kept), got {entry!r}",
                    fields=("hop_calibration",),
                )

    @property
    def budget_ranks(self) -> bool:
        """Whether the chunk budget's last step ranks chunks by score (where ``rank_weight`` and
        ``hop_calibration`` apply)."""
        return self.chunk_budget is not None and (
            self.budget_policy in ("best", "rerank") or self.fill_from == "labeled"
        )

    @property
    def first_hop_k(self) -> int:
        """Hits of the first hop's search: ``first_top_k``, else ``top_k``."""
        return self.top_k if self.first_top_k is None else self.first_top_k

    @property
    def first_hop_judged(self) -> int:
        """Hits of the first hop the Labeler judges: the reranker's best ``top_k``, else all."""
        return self.top_k if self.first_hop_reranker is not None else self.first_hop_k

    batch_size: int = bounded(32, low=1, roles=[SPEED_ONLY])
    # None: the saved model's training length; set a number to override it.
    labeler_max_length: int | None = bounded(None, low=1)
    filter_max_length: int | None = bounded(None, low=1)
    device: str | None = None
    # Faster Labeler/Filter inference on CPU (see benchmarks/labeler_speed.py and
    # benchmarks/labeler_backends.py for the measured cost): "int8" quantizes both models' Linear
    # layers in torch; "bf16" casts both to bfloat16 (fast on CPUs with AVX512-BF16/AMX, and on GPUs);
    # "onnx" / "onnx-int8" run them through ONNX Runtime with fp32 / int8 weights (needs the onnx
    # extra: pip install 'efficientrag[onnx]'). "auto": bf16 where the CPU has bfloat16 kernels
    # (AVX512-BF16/AMX) or on a GPU, float32 elsewhere; run fingerprints record what it resolved to.
    quantize: QuantizeMode = "none"


# Settings that shape only the answer call made after retrieval (a retrieval-only run never reads them).
ANSWER_SETTINGS = settings_with(EfficientRAGConfig, ANSWER_ONLY)
