"""The EfficientRAG retriever: multi-hop retrieval with two small models and no LLM per hop.

Per hop, for every open branch of every question (all batched), the steps of ``_hop``: retrieve
top-k for the branch's query (``_search``), label every new (query, chunk) pair (``_label``), keep
the chunks tagged Continue (``_keep``), let the Filter write the next queries from the query plus
the labeled words (``_next_queries``), and add the hop to each question's trace (``_record``).

Two options bound the result: ``floor_k`` keeps the question's own top hits whatever their tag (the
result then contains Direct-R@floor_k), and a ``chunk_budget`` with ``budget_policy="best"`` keeps
the most probable chunks at the end instead of the first ones found; ``fill_budget`` spends what
the loop left of the budget on the question's next-ranked hits. A chunk already in the pool is not
labeled again; a chunk tagged Terminate for one query is judged again when a different query
retrieves it (the tag depends on the query: the bridge paragraph is often retrieved, and rightly
rejected, by the original question before the next-hop query makes it relevant). A branch ends
when none of its chunks says Continue, when its query is empty or repeats, at the hop limit, or
when the question's chunk budget is full.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from efficientrag.data.schema import Chunk
from efficientrag.models.inputs import filter_words
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.pipeline.trace import HitRecord, Hop
from efficientrag.retrieval.base import Hit, Retriever
from efficientrag.text.words import join_words, split_words

log = logging.getLogger(__name__)

# Empty questions of one batch named in its error; the rest are counted.
EMPTY_QUESTIONS_SHOWN = 20


class LabelerLike(Protocol):
    """``predict`` returns objects with ``continue_prob`` and ``word_probs`` (one per chunk word)."""

    def predict(self, pairs: Sequence[tuple[list[str], list[str]]], **kw: Any) -> list[Any]: ...


class FilterLike(Protocol):
    """``predict`` returns objects with ``word_probs`` (one per input word)."""

    def predict(self, word_lists: Sequence[list[str]], **kw: Any) -> list[Any]: ...


class DecisionObserver(Protocol):
    """Sees every model decision with the position of its question in the batch: a batched run mixes
    the questions in one model call, so this is the one place a decision's question is known
    (self-training records them: ``efficientrag.adapt.self_training``)."""

    def labeled(self, question: int, query_words: list[str], chunk_words: list[str], pred: Any) -> None: ...

    def filtered(self, question: int, words: list[str], pred: Any) -> None: ...


def check_questions(questions: Sequence[object], *, source: str = "questions") -> None:
    """A question that is not text, or is blank, is a caller's mistake: an error naming it, rather than
    an empty result that reads like "nothing relevant in the corpus"."""
    if isinstance(questions, str):
        raise TypeError(f"{source}: expected a list of questions, got one string (use retrieve() for one)")
    empty: list[int] = []
    for i, q in enumerate(questions):
        if not isinstance(q, str):
            where = source if len(questions) == 1 else f"{source}[{i}]"
            raise ValueError(f"{where}: a question must be a string, got {type(q).__name__}")
        if not q.strip():
            empty.append(i)
    if len(questions) == 1 and empty:
        raise ValueError(f"{source}: the question is empty")
    if len(empty) == 1:
        raise ValueError(f"{source}[{empty[0]}]: the question is empty")
    if empty:
        # Every empty one is named (up to EMPTY_QUESTIONS_SHOWN), so one run shows all to fix.
        shown = ", ".join(f"{source}[{i}]" for i in empty[:EMPTY_QUESTIONS_SHOWN])
        more = f" and {len(empty) - EMPTY_QUESTIONS_SHOWN} more" if len(empty) > EMPTY_QUESTIONS_SHOWN else ""
        raise ValueError(f"{len(empty)} questions are empty: {shown}{more}")


def _loaded(name: str, model: Any, config: EfficientRAGConfig) -> Any:
    """``model`` itself when it can ``predict``; a folder (str or path) loaded as the ``name`` model."""
    if isinstance(model, (str, os.PathLike)):
        from efficientrag.models import Filter, Labeler

        cls = Labeler if name == "labeler" else Filter
        return cls.from_pretrained(model, device=config.device).quantize(config.quantize)
    if not callable(getattr(model, "predict", None)):
        cls_name = "Labeler" if name == "labeler" else "Filter"
        raise TypeError(
            f"EfficientRAG: {name} must be a loaded model ({cls_name}.from_pretrained(folder)) or its "
            f"folder, got {type(model).__name__}"
        )
    return model


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
            ``filter_calls``, ``llm_calls`` (always 0), and where they happened ``filled`` and
            ``query_words_truncated``.
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


@dataclass
class _Branch:
    query: str
    words: list[str]


@dataclass
class _State:
    question: str
    branches: list[_Branch]
    index: int = 0  # the question's position in the batch
    pool: dict[str, tuple[Chunk, float]] = field(default_factory=dict)
    labeled_pairs: set[tuple[str, str]] = field(default_factory=set)
    floor: set[str] = field(default_factory=set)
    # Floor chunks tagged Terminate: in the pool, but judged again by later queries (like any
    # rejected chunk), so a bridge paragraph kept only by the floor can still open its branch.
    floor_only: set[str] = field(default_factory=set)
    queries_used: set[str] = field(default_factory=set)
    # The question's own first-hop hits in rank order with their Continue probability (fill_budget).
    first_hits: list[tuple[Hit, float]] = field(default_factory=list)
    trace: list[Hop] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)

    def count(self, key: str, value: float = 1.0) -> None:
        self.counters[key] = self.counters.get(key, 0.0) + value


@dataclass
class _Pair:
    """A (query, chunk) pair the Labeler judges in this hop; ``branch`` indexes the hop's branches."""

    state: _State
    branch: int
    hit: Hit
    record: HitRecord


@dataclass
class _FilterJob:
    """One next-hop query to write: the Filter's input words (query plus labeled words)."""

    state: _State
    words: list[str]


@dataclass
class _HopWork:
    """What one hop of a batch produces, step by step; every list is batched over all questions."""

    hop: int
    branches: list[tuple[_State, _Branch]]
    records: list[list[HitRecord]] = field(default_factory=list)  # per branch, in rank order
    pairs: list[_Pair] = field(default_factory=list)
    labels: list[Any] = field(default_factory=list)  # the Labeler's prediction per pair
    truncated: dict[int, int] = field(default_factory=dict)  # branch -> query words cut
    # branch -> (Continue probability, labeled words) of each Continue chunk that entered the pool
    continued: dict[int, list[tuple[float, list[str]]]] = field(default_factory=dict)
    jobs: list[_FilterJob] = field(default_factory=list)
    next_branches: dict[int, list[_Branch]] = field(default_factory=dict)  # id(state) -> branches
    seconds: dict[str, float] = field(default_factory=dict)  # the whole batch's time per stage
    retrieval_split: dict[str, float] = field(default_factory=dict)  # encode/search, if reported

    def __post_init__(self) -> None:
        self.groups: list[tuple[_State, list[int]]] = []  # each question with its branch indices
        for bi, (state, _) in enumerate(self.branches):
            if not self.groups or self.groups[-1][0] is not state:
                self.groups.append((state, []))
            self.groups[-1][1].append(bi)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        self.seconds[stage] = time.perf_counter() - t0


class EfficientRAG:
    """Iterative retriever. ``retrieve_batch`` is the batched entry point; ``retrieve`` wraps it.

    Args:
        retriever: The search backend (anything with ``search(queries, k)``).
        labeler: A loaded model (``Labeler.from_pretrained(folder)``) or its folder, loaded here
            on ``config.device`` with ``config.quantize``.
        filter: The same for the Filter.
        config: The loop's settings (defaults: ``EfficientRAGConfig()``).
        observer: Sees every model decision (self-training records them).

    Raises:
        TypeError: ``retriever`` has no ``search``, or a model is neither loaded nor a folder; so
            a wrong argument fails here, naming it, not at the first ``retrieve``.
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
            raise TypeError(
                f"EfficientRAG: retriever must have a search(queries, k) method (a Retriever, "
                f"LangChainSearch or LlamaIndexSearch), got {type(retriever).__name__}"
            )
        self.retriever = retriever
        self.labeler = _loaded("labeler", labeler, self.config)
        self.filter = _loaded("filter", filter, self.config)
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
            raise ValueError(
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
        states = [_State(q, [_Branch(q, split_words(q))], i) for i, q in enumerate(questions)]
        for state in states:
            state.queries_used.add(_query_key(state.question))
        for hop in range(cfg.max_hops):
            active = [s for s in states if s.branches and not self._budget_full(s)]
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

    def _hop(self, hop: int, states: list[_State]) -> None:
        """One hop for every open branch of ``states``, each step batched over all of them."""
        work = _HopWork(hop, [(s, b) for s in states for b in s.branches])
        hits = self._search(work)
        self._label(work, hits)
        self._keep(work)
        self._next_queries(work)
        self._record(work)

    def _search(self, work: _HopWork) -> list[list[Hit]]:
        """Top-k for every branch, in one batched search."""
        with work.timed("retrieval"):
            hits = self.retriever.search([b.query for _, b in work.branches], self.config.top_k)
        work.retrieval_split = getattr(self.retriever, "last_timings", None) or {}
        return hits

    def _label(self, work: _HopWork, hits: list[list[Hit]]) -> None:
        """Label every (query, chunk) pair not judged before, in one Labeler batch. A chunk already in
        the pool is not labeled again (unless only the floor holds it), nor is a chunk already judged
        for the same query."""
        cfg = self.config
        for bi, ((state, branch), branch_hits) in enumerate(zip(work.branches, hits, strict=True)):
            state.count("retrieval_calls")
            qkey = _query_key(branch.query)
            records = []
            for rank, h in enumerate(branch_hits):
                pooled = h.id in state.pool and h.id not in state.floor_only
                seen = pooled or (qkey, h.id) in state.labeled_pairs
                record = HitRecord(h.id, h.score, seen, floor=work.hop == 0 and rank < cfg.floor_k)
                records.append(record)
                if not seen:
                    state.labeled_pairs.add((qkey, h.id))
                    work.pairs.append(_Pair(state, bi, h, record))
            work.records.append(records)
        with work.timed("labeler"):
            work.labels = (
                self.labeler.predict(
                    [(work.branches[p.branch][1].words, self._words_of(p.hit.chunk)) for p in work.pairs],
                    batch_size=cfg.batch_size,
                    max_length=cfg.labeler_max_length,
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

    def _keep(self, work: _HopWork) -> None:
        """Record each judgement; pool the floor chunks and, while the budget allows, the Continue
        chunks, whose labeled words go on to the Filter."""
        cfg = self.config
        for pair, pred in zip(work.pairs, work.labels, strict=True):
            state, h, prob = pair.state, pair.hit, float(pred.continue_prob)
            cont = prob >= cfg.tag_threshold
            words = self._words_of(h.chunk)
            if self.observer is not None:
                self.observer.labeled(state.index, work.branches[pair.branch][1].words, words, pred)
            labeled = [w for w, p in zip(words, pred.word_probs, strict=False) if p >= cfg.token_threshold]
            pair.record.judge(prob, cont, labeled)
            state.count("labeler_pairs")
            if work.hop == 0:
                state.first_hits.append((h, prob))
            if pair.record.floor:
                state.floor.add(h.id)
                state.pool[h.id] = (h.chunk, prob)
                if not cont:
                    state.floor_only.add(h.id)
            if cont and (h.id in state.floor or not self._budget_full(state)):
                state.floor_only.discard(h.id)
                state.pool[h.id] = (h.chunk, max(prob, state.pool.get(h.id, (None, 0.0))[1]))
                work.continued.setdefault(pair.branch, []).append((prob, labeled))

    def _next_queries(self, work: _HopWork) -> None:
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
                    work.jobs.append(_FilterJob(state, filter_words(branch.words, collected)))
            else:
                candidates = [
                    (prob, words, work.branches[bi][1])
                    for bi in own
                    for prob, words in work.continued.get(bi, [])
                ]
                candidates.sort(key=lambda x: -x[0])
                for _, words, branch in candidates[: cfg.max_branches]:
                    work.jobs.append(_FilterJob(state, filter_words(branch.words, [words])))
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
            key = _query_key(query)
            if not key or key in job.state.queries_used:
                continue
            job.state.queries_used.add(key)
            work.next_branches.setdefault(id(job.state), []).append(_Branch(query, q_words))

    def _record(self, work: _HopWork) -> None:
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
                "filter": work.seconds["filter"] * filter_share,
            }
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

    def _warn_truncated(self, branch_refs: list[tuple[_State, _Branch]], truncated: dict[int, int]) -> None:
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

    def _budget_full(self, state: _State) -> bool:
        budget = self.config.chunk_budget
        if budget is None or self.config.budget_policy == "best":
            return False  # "best" trims at the end (_select), so the loop itself never stops for it
        return len(state.pool) >= budget

    def _select(self, state: _State) -> list[tuple[Chunk, float]]:
        """The question's final chunks: the whole pool, or under a "best" budget the floor chunks
        and then the most probable Continue chunks up to the budget; then, with ``fill_budget``,
        the question's next-ranked first-hop hits up to the budget."""
        items = list(state.pool.items())
        budget = self.config.chunk_budget
        if budget is None or self.config.budget_policy != "best" or len(items) <= budget:
            kept = [v for _, v in items]
        else:
            floor = [v for cid, v in items if cid in state.floor]
            rest = sorted((v for cid, v in items if cid not in state.floor), key=lambda v: -v[1])
            kept = floor + rest[: max(0, budget - len(floor))]
        if self.config.fill_budget and budget is not None and len(kept) < budget:
            have = {c.id for c, _ in kept}
            fill = [(h.chunk, p) for h, p in state.first_hits if h.id not in have][: budget - len(kept)]
            state.count("filled", len(fill))
            kept += fill
        return kept

    def _words_of(self, chunk: Chunk) -> list[str]:
        words = self._chunk_words.get(chunk.id)
        if words is None:
            words = split_words(chunk.contents)
            if len(self._chunk_words) > 200_000:
                self._chunk_words.clear()
            self._chunk_words[chunk.id] = words
        return words


def _query_key(query: str) -> str:
    return " ".join(query.lower().split())
