"""The EfficientRAG retriever: multi-hop retrieval with two small models and no LLM per hop.

Per hop, for every open branch of every question (all batched): retrieve top-k for the branch's
query, run the Labeler on every new (query, chunk) pair, keep the chunks tagged Continue, and let the
Filter write the next query from the query plus the labeled words. Two options bound the result:
``floor_k`` keeps the question's own top hits whatever their tag (the result then contains
Direct-R@floor_k), and a ``chunk_budget`` with ``budget_policy="best"`` keeps the most probable
chunks at the end instead of the first ones found; ``fill_budget`` spends what the loop left of the
budget on the question's next-ranked hits. A chunk already in the pool is
not labeled again; a chunk tagged Terminate for one query is judged again when a different query
retrieves it (the tag depends on the query: the bridge paragraph is often retrieved, and rightly
rejected, by the original question before the next-hop query makes it relevant). A branch ends when none of its chunks says Continue, when its query is empty or repeats, at
the hop limit, or when the question's chunk budget is full.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from efficientrag.data.schema import Chunk
from efficientrag.models.inputs import filter_words
from efficientrag.pipeline.config import EfficientRAGConfig
from efficientrag.retrieval.base import Hit, Retriever
from efficientrag.text.words import join_words, split_words

log = logging.getLogger(__name__)


class LabelerLike(Protocol):
    """``predict`` returns objects with ``continue_prob`` and ``word_probs`` (one per chunk word)."""

    def predict(self, pairs: Sequence[tuple[list[str], list[str]]], **kw: Any) -> list[Any]: ...


class FilterLike(Protocol):
    """``predict`` returns objects with ``word_probs`` (one per input word)."""

    def predict(self, word_lists: Sequence[list[str]], **kw: Any) -> list[Any]: ...


def check_questions(questions: Sequence[object], *, source: str = "questions") -> None:
    """A question that is not text, or is blank, is a caller's mistake: an error naming it, rather than
    an empty result that reads like "nothing relevant in the corpus"."""
    if isinstance(questions, str):
        raise TypeError(f"{source}: expected a list of questions, got one string (use retrieve() for one)")
    for i, q in enumerate(questions):
        where = source if len(questions) == 1 else f"{source}[{i}]"
        if not isinstance(q, str):
            raise ValueError(f"{where}: a question must be a string, got {type(q).__name__}")
        if not q.strip():
            raise ValueError(f"{where}: the question is empty")


@dataclass
class RetrievalResult:
    question: str
    chunks: list[Chunk]
    scores: list[float]
    trace: list[dict[str, Any]]
    counters: dict[str, float] = field(default_factory=dict)

    @property
    def chunk_ids(self) -> list[str]:
        return [c.id for c in self.chunks]


@dataclass
class _Branch:
    query: str
    words: list[str]


@dataclass
class _State:
    question: str
    branches: list[_Branch]
    pool: dict[str, tuple[Chunk, float]] = field(default_factory=dict)
    labeled_pairs: set[tuple[str, str]] = field(default_factory=set)
    floor: set[str] = field(default_factory=set)
    # Floor chunks tagged Terminate: in the pool, but judged again by later queries (like any
    # rejected chunk), so a bridge paragraph kept only by the floor can still open its branch.
    floor_only: set[str] = field(default_factory=set)
    queries_used: set[str] = field(default_factory=set)
    # The question's own first-hop hits in rank order with their Continue probability (fill_budget).
    first_hits: list[tuple[Hit, float]] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)

    def count(self, key: str, value: float = 1.0) -> None:
        self.counters[key] = self.counters.get(key, 0.0) + value


class EfficientRAG:
    """Iterative retriever. ``retrieve_batch`` is the batched entry point; ``retrieve`` wraps it."""

    def __init__(
        self,
        retriever: Retriever,
        labeler: LabelerLike,
        filter: FilterLike,  # noqa: A002 - the paper's name for the component
        config: EfficientRAGConfig | None = None,
    ) -> None:
        self.retriever = retriever
        self.labeler = labeler
        self.filter = filter
        self.config = config or EfficientRAGConfig()
        self._chunk_words: dict[str, list[str]] = {}
        self._warned_truncation = False

    @classmethod
    def from_config(cls, retriever: Retriever, config: EfficientRAGConfig) -> EfficientRAG:
        """Load the Labeler and Filter named in the config (folders written by training)."""
        from efficientrag.models import Filter, Labeler

        if not config.labeler or not config.filter:
            raise ValueError(
                "EfficientRAG needs trained models: set efficientrag.labeler and efficientrag.filter to the "
                "folders written by `efficientrag train labeler|filter` (their best/ subfolder)"
            )
        labeler = Labeler.from_pretrained(config.labeler, device=config.device).quantize(config.quantize)
        filt = Filter.from_pretrained(config.filter, device=config.device).quantize(config.quantize)
        return cls(retriever, labeler, filt, config)

    def retrieve(self, question: str) -> RetrievalResult:
        return self.retrieve_batch([question])[0]

    def retrieve_batch(self, questions: Sequence[str]) -> list[RetrievalResult]:
        check_questions(questions)
        cfg = self.config
        states = [_State(q, [_Branch(q, split_words(q))]) for q in questions]
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
        cfg = self.config
        branch_refs = [(s, b) for s in states for b in s.branches]
        t0 = time.perf_counter()
        hits = self.retriever.search([b.query for _, b in branch_refs], cfg.top_k)
        t_search = time.perf_counter() - t0
        split = getattr(self.retriever, "last_timings", None) or {}

        # Label every new (query, chunk) pair of chunks not yet in the pool, in one batch.
        to_label: list[tuple[_State, int, Hit, bool]] = []
        pairs: list[tuple[list[str], list[str]]] = []
        hop_hits: list[list[dict[str, Any]]] = []
        for bi, ((state, branch), branch_hits) in enumerate(zip(branch_refs, hits, strict=True)):
            state.count("retrieval_calls")
            rows = []
            qkey = _query_key(branch.query)
            for rank, h in enumerate(branch_hits):
                pooled = h.id in state.pool and h.id not in state.floor_only
                skip = pooled or (qkey, h.id) in state.labeled_pairs
                row: dict[str, Any] = {"id": h.id, "score": h.score, "seen": skip}
                floor = hop == 0 and rank < cfg.floor_k
                if floor:
                    row["floor"] = True
                rows.append(row)
                if skip:
                    continue
                state.labeled_pairs.add((qkey, h.id))
                to_label.append((state, bi, h, floor))
                pairs.append((branch.words, self._words_of(h.chunk)))
            hop_hits.append(rows)
        t0 = time.perf_counter()
        labels = (
            self.labeler.predict(pairs, batch_size=cfg.batch_size, max_length=cfg.labeler_max_length)
            if pairs
            else []
        )
        t_labeler = time.perf_counter() - t0

        # A query longer than the Labeler's input was cut (at word boundaries) for every pair it is in.
        truncated: dict[int, int] = {}
        for (_, bi, _, _), pred in zip(to_label, labels, strict=True):
            cut = int(getattr(pred, "query_truncated_words", 0) or 0)
            if cut:
                truncated[bi] = max(truncated.get(bi, 0), cut)
        if truncated:
            self._warn_truncated(branch_refs, truncated)

        # Collect Continue chunks and their labeled words per branch.
        infos: dict[int, list[tuple[float, list[str], Hit]]] = {}
        row_of = {(bi, r["id"]): r for bi, rows in enumerate(hop_hits) for r in rows if not r["seen"]}
        for (state, bi, h, floor), pred in zip(to_label, labels, strict=True):
            cont = float(pred.continue_prob) >= cfg.tag_threshold
            words = self._words_of(h.chunk)
            labeled = [w for w, p in zip(words, pred.word_probs, strict=False) if p >= cfg.token_threshold]
            row = row_of[(bi, h.id)]
            row.update(tag="continue" if cont else "terminate", continue_prob=float(pred.continue_prob))
            row["labeled_words"] = labeled
            state.count("labeler_pairs")
            if hop == 0:
                state.first_hits.append((h, float(pred.continue_prob)))
            if floor:
                state.floor.add(h.id)
                state.pool[h.id] = (h.chunk, float(pred.continue_prob))
                if not cont:
                    state.floor_only.add(h.id)
            if cont and (h.id in state.floor or not self._budget_full(state)):
                state.floor_only.discard(h.id)
                prob = max(float(pred.continue_prob), state.pool.get(h.id, (None, 0.0))[1])
                state.pool[h.id] = (h.chunk, prob)
                infos.setdefault(bi, []).append((float(pred.continue_prob), labeled, h))

        # Form next queries: merged (one per question) or one per Continue chunk.
        filter_jobs: list[tuple[_State, _Branch, list[str]]] = []
        for state in states:
            own = [bi for bi, (s, _) in enumerate(branch_refs) if s is state]
            if cfg.query_mode == "merged":
                collected = [(p, w, h) for bi in own for (p, w, h) in infos.get(bi, [])]
                if collected:
                    # The hop's query is the one the chunks answered; with one branch per hop in
                    # merged mode there is exactly one.
                    branch = branch_refs[own[0]][1]
                    filter_jobs.append(
                        (state, branch, filter_words(branch.words, [w for _, w, _ in collected]))
                    )
            else:
                candidates = [(p, w, branch_refs[bi][1]) for bi in own for (p, w, _) in infos.get(bi, [])]
                candidates.sort(key=lambda x: -x[0])
                for _, w, branch in candidates[: cfg.max_branches]:
                    filter_jobs.append((state, branch, filter_words(branch.words, [w])))
        t0 = time.perf_counter()
        kept = (
            self.filter.predict(
                [words for _, _, words in filter_jobs],
                batch_size=cfg.batch_size,
                max_length=cfg.filter_max_length,
            )
            if filter_jobs
            else []
        )
        t_filter = time.perf_counter() - t0

        next_branches: dict[int, list[_Branch]] = {id(s): [] for s in states}
        next_queries: dict[int, list[str]] = {id(s): [] for s in states}
        for (state, _, words), pred in zip(filter_jobs, kept, strict=True):
            state.count("filter_calls")
            q_words = [w for w, p in zip(words, pred.word_probs, strict=False) if p >= cfg.filter_threshold]
            query = join_words(q_words)
            key = _query_key(query)
            if not key or key in state.queries_used:
                continue
            state.queries_used.add(key)
            next_branches[id(state)].append(_Branch(query, q_words))
            next_queries[id(state)].append(query)

        n_pairs, n_jobs = max(1, len(pairs)), max(1, len(filter_jobs))
        for state in states:
            own = [bi for bi, (s, _) in enumerate(branch_refs) if s is state]
            share = sum(1 for st, *_ in to_label if st is state) / n_pairs
            filter_share = sum(1 for st, _, _ in filter_jobs if st is state) / n_jobs
            query_share = len(own) / max(1, len(branch_refs))
            timings = {
                "retrieval": t_search * query_share,
                "labeler": t_labeler * share,
                "filter": t_filter * filter_share,
            }
            # "retrieval" splits into query encoding and index search when the backend reports it.
            timings.update({name: seconds * query_share for name, seconds in split.items()})
            entry: dict[str, Any] = {
                "hop": hop,
                "queries": [branch_refs[bi][1].query for bi in own],
                "hits": [hop_hits[bi] for bi in own],
                "next_queries": next_queries[id(state)],
                "timings_s": timings,
            }
            cut = {j: truncated[bi] for j, bi in enumerate(own) if bi in truncated}
            if cut:
                # query index within this hop -> words the Labeler did not see (its input limit).
                entry["truncated_query_words"] = cut
                state.count("query_words_truncated", float(sum(cut.values())))
            state.trace.append(entry)
            state.branches = next_branches[id(state)]

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
