"""The EfficientRAG retriever: multi-hop retrieval with two small models and no LLM per hop.

Per hop, for every open branch of every question (all batched), the steps of ``_hop``: retrieve
top-k for the branch's query (``_search``), label every new (query, chunk) pair (``_label``), keep
the chunks tagged Continue (``_keep``), let the Filter write the next queries from the query plus
the labeled words (``_next_queries``), and add the hop to each question's trace (``_record``).

Two options bound the result: ``floor_k`` keeps the question's own top hits whatever their tag (the
result then contains Direct-R@floor_k), and a ``chunk_budget`` with ``budget_policy="best"`` keeps
the most probable chunks at the end instead of the first ones found; ``fill_budget`` spends what
the loop left of the budget on the question's next-ranked hits (or, ``fill_from="labeled"``, on the
surest other chunks the Labeler judged). That last choice is :mod:`efficientrag.pipeline.budget`'s,
a function of what the loop recorded, so a trace can replay it under other settings. A chunk already in the pool is not
labeled again; a chunk tagged Terminate for one query is judged again when a different query
retrieves it (the tag depends on the query: the bridge paragraph is often retrieved, and rightly
rejected, by the original question before the next-hop query makes it relevant). A branch ends
when none of its chunks says Continue, when its query is empty or repeats, at the hop limit, when
the question's chunk budget is full (``"first"``), or when its ``pair_budget`` of Labeler pairs is
spent (a later hop judges only what is left of it, best-ranked hits first).

``budget_policy="rerank"`` makes the loop contain its Labeler as a reranker: with ``floor_k=0`` and
``first_top_k`` the reranker's N, the first hop's judgements alone give ``labeler_rerank``'s top
``chunk_budget``, and a chunk a later hop judges enters only by outscoring the lowest of those (on
the scale ``hop_calibration`` puts every hop on). Its hops are the loop's without ``first_top_k``:
the hits past ``top_k`` are judged for the budget only, and the Filter reads the Continue chunks of
the search's top ``top_k``.

What the loop is given is checked in :mod:`efficientrag.pipeline.inputs`; the records that keep
track of each question and branch through a batched hop are in :mod:`efficientrag.pipeline.hop_state`.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from efficientrag.data.schema import Chunk
from efficientrag.errors import EfficientRAGError, InvalidArgumentError, WrongTypeError
from efficientrag.models.inputs import filter_words
from efficientrag.pipeline.budget import choose_chunks
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.hop_state import Branch, FilterJob, HopWork, Pair, QuestionState, query_key
from efficientrag.pipeline.inputs import (
    DecisionObserver,
    FilterLike,
    LabelerLike,
    check_questions,
    load_model,
)
from efficientrag.pipeline.trace import HitRecord, Hop
from efficientrag.retrieval.base import Hit, Retriever
from efficientrag.text.words import join_words, split_words

log = logging.getLogger(__name__)


class ChunkIdConflictError(EfficientRAGError, ValueError):
    """Two different chunks came back from a question's searches under one id."""


@dataclass
class RetrievalResult:
    """What the loop found for one question, and how (the trace), so callers can both use the
    chunks and see why each was kept.

    Attributes:
        question: The question as asked.
        chunks: The kept chunks in the order the loop kept them (hop by hop, rank order within a
            hop; under ``budget_policy="best"`` floor chunks, then by Continue probability), then
            any ``fill_budget`` chunks.
        scores: Each kept chunk's Continue probability (its highest over the queries that kept it).
        trace: One :class:`Hop` per hop the question ran.
        counters: Per-question counts: ``hops``, ``retrieval_calls``, ``labeler_pairs``,
            ``filter_calls``, ``llm_calls`` (always 0), and where they happened ``filled``,
            ``query_words_truncated``, ``reranked_pairs`` (the ``first_hop_reranker``'s) and
            ``exited_pairs`` (Labeler pairs that left at the early exit, among ``labeler_pairs``).
    """

    question: str
    chunks: list[Chunk]
    scores: list[float]
    trace: list[Hop]
    counters: dict[str, float] = field(default_factory=dict)

    @property
    def chunk_ids(self) -> list[str]:
        """The ids of ``chunks``, in the same order."""
        return [c.id for c in self.chunks]


class EfficientRAG:
    """Iterative retriever. ``retrieve_batch`` is the batched entry point; ``retrieve`` wraps it.

    Args:
        retriever: The search backend (anything with ``search(queries, k)``).
        labeler: A loaded model (``Labeler.from_pretrained(folder)``) or its folder, loaded here
            on ``config.device`` with ``config.quantize``. A loaded model runs as it is: with
            ``quantize`` other than ``none`` it must already run on that path.
        filter: The same for the Filter.
        config: The loop's settings (defaults: ``EfficientRAGConfig()``).
        observer: Sees every model decision (self-training records them).

    Raises:
        TypeError: ``retriever`` has no ``search``, or a model is neither loaded nor a folder; so
            a wrong argument fails here, naming it, not at the first ``retrieve``.
        ValueError: A loaded model runs on another path than ``config.quantize`` asks for.
    """

    def __init__(
        self,
        retriever: Retriever,
        labeler: LabelerLike | str | os.PathLike[str],
        filter: FilterLike | str | os.PathLike[str],  # noqa: A002 - the paper's name for the component
        config: EfficientRAGConfig | None = None,
        observer: DecisionObserver | None = None,
    ) -> None:
        self.config = config or EfficientRAGConfig()
        if not callable(getattr(retriever, "search", None)):
            raise WrongTypeError(
                f"EfficientRAG: retriever must have a search(queries, k) method (a Retriever, "
                f"LangChainSearch or LlamaIndexSearch), got {type(retriever).__name__}"
            )
        self.retriever = retriever
        self.labeler = load_model("labeler", labeler, self.config)
        self.filter = load_model("filter", filter, self.config)
        self.reranker = self._load_reranker()
        self.observer = observer
        self._chunk_words: dict[str, list[str]] = {}
        self._warned_truncation = False

    @classmethod
    def from_config(cls, retriever: Retriever, config: EfficientRAGConfig) -> EfficientRAG:
        """Load the Labeler and Filter named in the config (folders written by training).

        Args:
            retriever: The search backend.
            config: The loop's settings; ``labeler`` and ``filter`` name the model folders.

        Returns:
            The retriever, its models loaded on ``config.device`` with ``config.quantize``.

        Raises:
            ValueError: The config does not name both models.
        """
        if not config.labeler or not config.filter:
            raise InvalidArgumentError(
                "EfficientRAG needs trained models: set efficientrag.labeler and efficientrag.filter to the "
                "folders written by `efficientrag train labeler|filter` (their best/ subfolder)"
            )
        return cls(retriever, config.labeler, config.filter, config)

    def retrieve(self, question: str) -> RetrievalResult:
        """Run the loop for one question (a batch of one; use :meth:`retrieve_batch` for many).

        Args:
            question: The question.

        Returns:
            The kept chunks with their trace.

        Raises:
            ValueError: The question is empty or not a string.
        """
        return self.retrieve_batch([question])[0]

    def retrieve_batch(self, questions: Sequence[str]) -> list[RetrievalResult]:
        """Run the loop for many questions at once: each hop's search, Labeler and Filter calls are
        batched over every open branch of every question, which is where the speed comes from.

        Args:
            questions: The questions (a list, not one string).

        Returns:
            One result per question, in order.

        Raises:
            TypeError: ``questions`` is a single string.
            ValueError: A question is empty or not a string (every empty one is named).
        """
        check_questions(questions)
        cfg = self.config
        states = [QuestionState(q, [Branch(q, split_words(q))], i) for i, q in enumerate(questions)]
        for state in states:
            state.queries_used.add(query_key(state.question))
        for hop in range(cfg.max_hops):
            active = [
                s for s in states if s.branches and not self._budget_full(s) and self._pairs_left(s) > 0
            ]
            if not active:
                break
            self._hop(hop, active)
        results = []
        for s in states:
            kept = self._select(s)
            chunks = [c for c, _ in kept]
            scores = [p for _, p in kept]
            s.counters["hops"] = float(len(s.trace))
            s.counters["llm_calls"] = 0.0
            results.append(RetrievalResult(s.question, chunks, scores, s.trace, s.counters))
        return results

    # ------------------------------------------------------------------------------------------

    def _hop(self, hop: int, states: list[QuestionState]) -> None:
        """One hop for every open branch of ``states``, each step batched over all of them."""
        work = HopWork(hop, [(s, b) for s in states for b in s.branches])
        hits = self._search(work)
        self._label(work, hits)
        self._keep(work)
        # The last hop's next queries would never be searched: the Filter is not run for them.
        if hop + 1 < self.config.max_hops:
            self._next_queries(work)
        self._record(work)

    def _load_reranker(self) -> Any:
        """The first hop's cross-encoder (``first_hop_reranker``), or None."""
        if self.config.first_hop_reranker is None:
            return None
        from efficientrag.models.cross_encoder import load_cross_encoder

        return load_cross_encoder(self.config.first_hop_reranker, device=self.config.device)

    def _search(self, work: HopWork) -> list[list[Hit]]:
        """Top-k for every branch, in one batched search (the first hop: ``first_top_k``, reranked
        by the ``first_hop_reranker`` when there is one)."""
        first = work.hop == 0
        queries = [b.query for _, b in work.branches]
        with work.timed("retrieval"):
            hits = self.retriever.search(queries, self.config.first_hop_k if first else self.config.top_k)
        work.retrieval_split = getattr(self.retriever, "last_timings", None) or {}
        if first and self.reranker is not None:
            with work.timed("rerank"):
                hits = self._rerank(work, queries, hits)
        return hits

    def _rerank(self, work: HopWork, queries: list[str], hits: list[list[Hit]]) -> list[list[Hit]]:
        """Each query's hits in the reranker's order, cut to ``top_k``, each with the reranker's
        score in place of the search's (so the trace shows the order the Labeler was given)."""
        from efficientrag.models.cross_encoder import score_pairs

        pairs = [(q, h.chunk.contents) for q, hs in zip(queries, hits, strict=True) for h in hs]
        scores = iter(score_pairs(self.reranker, pairs, batch_size=self.config.batch_size))
        out = []
        for (state, _), hs in zip(work.branches, hits, strict=True):
            own = [next(scores) for _ in hs]
            best = sorted(range(len(hs)), key=lambda i: (-own[i], i))[: self.config.top_k]
            out.append([Hit(hs[i].chunk, own[i]) for i in best])
            state.count("reranked_pairs", float(len(hs)))
        return out

    def _label(self, work: HopWork, hits: list[list[Hit]]) -> None:
        """Label every (query, chunk) pair not judged before, in one Labeler batch. A chunk already in
        the pool is not labeled again (unless only the floor holds it), nor is a chunk already judged
        for the same query."""
        cfg = self.config
        left = {id(state): self._pairs_left(state) for state, _ in work.groups}
        for bi, ((state, branch), branch_hits) in enumerate(zip(work.branches, hits, strict=True)):
            state.count("retrieval_calls")
            qkey = query_key(branch.query)
            records = []
            ranks = state.judgements.best_rank
            for rank, h in enumerate(branch_hits):
                self._check_same_chunk(state, h)
                ranks[h.id] = min(rank, ranks.get(h.id, rank))
                pooled = h.id in state.judgements.pool and h.id not in state.floor_only
                seen = pooled or (qkey, h.id) in state.labeled_pairs
                record = HitRecord(h.id, h.score, seen, floor=work.hop == 0 and rank < cfg.floor_k)
                records.append(record)
                if seen:
                    continue
                if left[id(state)] < 1:
                    record.unjudged = True  # the question's pair_budget is spent
                    continue
                left[id(state)] -= 1
                state.labeled_pairs.add((qkey, h.id))
                work.pairs.append(Pair(state, bi, h, record, rank))
            work.records.append(records)
        # The early exit is asked for only when set, so a Labeler without one is called as before.
        exit_kw = {} if cfg.exit_threshold is None else {"exit_below": cfg.exit_threshold}
        with work.timed("labeler"):
            work.labels = (
                self.labeler.predict(
                    [(work.branches[p.branch][1].words, self._words_of(p.hit.chunk)) for p in work.pairs],
                    batch_size=cfg.batch_size,
                    max_length=cfg.labeler_max_length,
                    **exit_kw,
                )
                if work.pairs
                else []
            )
        # A query longer than the Labeler's input was cut (at word boundaries) for every pair it is in.
        for pair, pred in zip(work.pairs, work.labels, strict=True):
            cut = int(getattr(pred, "query_truncated_words", 0) or 0)
            if cut:
                work.truncated[pair.branch] = max(work.truncated.get(pair.branch, 0), cut)
        if work.truncated:
            self._warn_truncated(work.branches, work.truncated)

    def _keep(self, work: HopWork) -> None:
        """Record each judgement; pool the floor chunks and, while the budget allows, the Continue
        chunks, whose labeled words go on to the Filter."""
        cfg = self.config
        for pair, pred in zip(work.pairs, work.labels, strict=True):
            state, h, prob = pair.state, pair.hit, float(pred.continue_prob)
            # A pair that left the Labeler early has an estimate and no word labels: never Continue.
            exited = getattr(pred, "exited_at", None)
            cont = prob >= cfg.tag_threshold and exited is None
            words = self._words_of(h.chunk)
            # An early exit is the head's estimate, not the Labeler's decision: observers see only those.
            if self.observer is not None and exited is None:
                self.observer.labeled(state.index, work.branches[pair.branch][1].words, words, pred)
            labeled = [w for w, p in zip(words, pred.word_probs, strict=False) if p >= cfg.token_threshold]
            pair.record.judge(prob, cont, labeled, exited)
            state.count("labeler_pairs")
            if exited is not None:
                state.count("exited_pairs")
            j = state.judgements
            if work.hop == 0:
                j.first_hits.append((h.id, prob))
            j.add(h.id, work.hop, prob, pair.rank)
            if pair.record.floor:
                j.floor.add(h.id)
                j.pool[h.id] = prob
                if not cont:
                    state.floor_only.add(h.id)
            # Under "rerank" the first hop's hits past top_k are judged for the budget only: out of
            # the pool, a later query judges them again, so the hops are the loop's without them.
            budget_only = work.hop == 0 and pair.rank >= cfg.top_k and cfg.budget_policy == "rerank"
            if cont and not budget_only and (h.id in j.floor or not self._budget_full(state)):
                state.floor_only.discard(h.id)
                j.pool[h.id] = max(prob, j.pool.get(h.id, 0.0))
                work.continued.setdefault(pair.branch, []).append((prob, labeled))

    def _next_queries(self, work: HopWork) -> None:
        """The Filter writes the next queries: one per question from all its Continue chunks
        (merged), or one per Continue chunk, the most probable ``max_branches`` first (branch). An
        empty query, or one the question has already asked, opens no branch."""
        cfg = self.config
        for state, own in work.groups:
            if cfg.query_mode == "merged":
                collected = [words for bi in own for _, words in work.continued.get(bi, [])]
                if collected:
                    # The hop's query is the one the chunks answered; with one branch per hop in
                    # merged mode there is exactly one.
                    branch = work.branches[own[0]][1]
                    work.jobs.append(FilterJob(state, filter_words(branch.words, collected)))
            else:
                candidates = [
                    (prob, words, work.branches[bi][1])
                    for bi in own
                    for prob, words in work.continued.get(bi, [])
                ]
                candidates.sort(key=lambda x: -x[0])
                for _, words, branch in candidates[: cfg.max_branches]:
                    work.jobs.append(FilterJob(state, filter_words(branch.words, [words])))
        with work.timed("filter"):
            kept = (
                self.filter.predict(
                    [job.words for job in work.jobs],
                    batch_size=cfg.batch_size,
                    max_length=cfg.filter_max_length,
                )
                if work.jobs
                else []
            )
        for job, pred in zip(work.jobs, kept, strict=True):
            job.state.count("filter_calls")
            if self.observer is not None:
                self.observer.filtered(job.state.index, job.words, pred)
            q_words = [
                w for w, p in zip(job.words, pred.word_probs, strict=False) if p >= cfg.filter_threshold
            ]
            query = join_words(q_words)
            key = query_key(query)
            if not key or key in job.state.queries_used:
                continue
            job.state.queries_used.add(key)
            work.next_branches.setdefault(id(job.state), []).append(Branch(query, q_words))

    def _record(self, work: HopWork) -> None:
        """Append each question's ``Hop`` to its trace (with its share of the batch's time) and open
        its next branches."""
        n_pairs, n_jobs = max(1, len(work.pairs)), max(1, len(work.jobs))
        pairs_of = Counter(id(p.state) for p in work.pairs)
        jobs_of = Counter(id(job.state) for job in work.jobs)
        for state, own in work.groups:
            share = pairs_of[id(state)] / n_pairs
            filter_share = jobs_of[id(state)] / n_jobs
            query_share = len(own) / max(1, len(work.branches))
            timings = {
                "retrieval": work.seconds["retrieval"] * query_share,
                "labeler": work.seconds["labeler"] * share,
                "filter": work.seconds.get("filter", 0.0) * filter_share,
            }
            if "rerank" in work.seconds:
                timings["rerank"] = work.seconds["rerank"] * query_share
            # "retrieval" splits into query encoding and index search when the backend reports it.
            timings.update({name: seconds * query_share for name, seconds in work.retrieval_split.items()})
            next_branches = work.next_branches.get(id(state), [])
            entry = Hop(
                hop=work.hop,
                queries=[work.branches[bi][1].query for bi in own],
                hits=[work.records[bi] for bi in own],
                next_queries=[b.query for b in next_branches],
                timings_s=timings,
                # query index within this hop -> words the Labeler did not see (its input limit).
                truncated_query_words={
                    j: work.truncated[bi] for j, bi in enumerate(own) if bi in work.truncated
                },
            )
            if entry.truncated_query_words:
                state.count("query_words_truncated", float(sum(entry.truncated_query_words.values())))
            state.trace.append(entry)
            state.branches = next_branches

    def _warn_truncated(
        self, branch_refs: list[tuple[QuestionState, Branch]], truncated: dict[int, int]
    ) -> None:
        """Once per retriever: a query cut silently would look like a retrieval failure."""
        if self._warned_truncation:
            return
        self._warned_truncation = True
        bi, cut = next(iter(truncated.items()))
        words = len(branch_refs[bi][1].words)
        limit = self.config.labeler_max_length or getattr(self.labeler, "max_length", None)
        encoder_limit = getattr(getattr(self.retriever, "encoder", None), "max_length", None)
        log.warning(
            "a query of %d words is longer than the Labeler's input (%s tokens with its chunk): its last "
            "%d words were cut%s; each cut is recorded in the trace (truncated_query_words). Shorten "
            "the question or raise efficientrag.labeler_max_length.",
            words,
            limit,
            cut,
            f" (the retriever's encoder also reads only {encoder_limit} tokens of it)"
            if encoder_limit
            else "",
        )

    @staticmethod
    def _check_same_chunk(state: QuestionState, hit: Hit) -> None:
        """One id, one chunk, across every search of a question: the loop keys chunks by id, so a
        second text under a known id would be taken as judged already and dropped unread."""
        known = state.chunks.setdefault(hit.id, hit.chunk)
        if (known.title, known.text) != (hit.chunk.title, hit.chunk.text):
            raise ChunkIdConflictError(
                f"the search returned two different chunks under the id {hit.id!r} for the question "
                f"{state.question[:60]!r}: {known.contents[:80]!r} and {hit.chunk.contents[:80]!r}; every "
                "chunk of the index needs its own id"
            )

    def _budget_full(self, state: QuestionState) -> bool:
        budget = self.config.chunk_budget
        if budget is None or self.config.budget_policy != "first":
            return False  # "best" and "rerank" trim at the end (_select): the loop never stops for it
        return len(state.judgements.pool) >= budget

    def _pairs_left(self, state: QuestionState) -> float:
        """Labeler pairs the question may still ask for (``pair_budget``; inf without one)."""
        budget = self.config.pair_budget
        return float("inf") if budget is None else budget - state.counters.get("labeler_pairs", 0.0)

    def _select(self, state: QuestionState) -> list[tuple[Chunk, float]]:
        """The question's final chunks with their probability (efficientrag.pipeline.budget)."""
        chosen, filled = choose_chunks(state.judgements, self.config)
        if filled is not None:
            state.count("filled", filled)
        return [(state.chunks[cid], p) for cid, p in chosen]

    def _words_of(self, chunk: Chunk) -> list[str]:
        words = self._chunk_words.get(chunk.id)
        if words is None:
            words = split_words(chunk.contents)
            if len(self._chunk_words) > 200_000:
                self._chunk_words.clear()
            self._chunk_words[chunk.id] = words
        return words
