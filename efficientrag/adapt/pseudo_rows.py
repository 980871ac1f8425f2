"""Labeler and Filter training rows from a corpus alone, in the synthesized rows' format.

corpus -> words and sentences (:mod:`chunk_text`) -> title links and chains (:mod:`links`) ->
pseudo questions (:mod:`pseudo_questions`) -> rows, as ``efficientrag.synth.build`` writes them
for the annotation teacher: per hop a Continue row (the hop's query, its paragraph, the useful
words), a question positive for later hops (the question itself with that paragraph), hard
negatives (the hop query's best-ranked paragraphs of the *same* corpus that are not in the chain,
do not share a chain title and do not contain the answer or a bridge name), and a Filter row per
hop that has a next one. Rows are split by pseudo question; the validation side is also written
as questions with gold chunks (``pseudo_validation.jsonl``), so retrieval settings can be scored
on the target corpus without one real question: each chain's question, and beside it the same
question about its last paragraph alone, which one search answers. Chain questions alone favour
hops; with single-paragraph ones beside them, a choice made on them can see where hops do not pay.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from efficientrag.adapt.choice import PSEUDO_GROUP, ScoringSet
from efficientrag.adapt.chunk_text import ChunkText, chunk_texts
from efficientrag.adapt.links import LinkConfig, build_chains, mine_links, title_aliases
from efficientrag.adapt.pseudo_questions import PseudoConfig, PseudoQuestion, make_question
from efficientrag.atomic import write_json_atomic
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.data.split import TRAIN, VALIDATION, split_of
from efficientrag.jsonl import write_jsonl
from efficientrag.models.inputs import TAG_CONTINUE, TAG_TERMINATE, FilterRow, LabelerRow
from efficientrag.retrieval.base import Retriever
from efficientrag.setting_fields import bounded, check_settings
from efficientrag.synth.negatives import choose_negatives
from efficientrag.synth.records import Reject
from efficientrag.text.words import join_words

PSEUDO_DATASET = "pseudo-corpus"
QUESTION_PREFIX = "pseudo/"
# The validation questions' types: a chain's question, and the same question about its last
# paragraph alone (``PseudoQuestion.single_words``), whose id ends in SINGLE_SUFFIX.
PSEUDO_TYPE, PSEUDO_SINGLE_TYPE = "pseudo", "pseudo-single"
SINGLE_SUFFIX = "/single"


@dataclass
class PseudoRowsConfig:
    max_questions: int = bounded(1500, low=1)
    max_per_source: int = bounded(2, low=1)  # questions per first paragraph: spread over the corpus
    max_hops: int = 3
    negatives_top_k: int = 10
    negatives_per_query: int = 4
    question_positives: bool = True
    validation_ratio: float = bounded(0.15, low=0.0, below=1.0)
    seed: int = 0
    link: LinkConfig = field(default_factory=LinkConfig)
    question: PseudoConfig = field(default_factory=PseudoConfig)

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass
class PseudoSets:
    labeler: dict[str, list[dict[str, Any]]]
    filter: dict[str, list[dict[str, Any]]]
    validation_questions: list[Example]
    rejects: list[dict[str, str]]
    stats: dict[str, Any]


def pseudo_questions(
    corpus: Corpus, cfg: PseudoRowsConfig, *, progress: bool = True
) -> tuple[list[PseudoQuestion], dict[str, ChunkText], list[dict[str, str]], dict[str, Any]]:
    """Questions from up to ``max_questions`` chains, drawn in a seeded hash order."""
    texts = {
        t.id: t
        for t in tqdm(chunk_texts(corpus.chunks), total=len(corpus), desc="read corpus", disable=not progress)
    }
    links = mine_links(list(texts.values()), cfg.link)
    chains = build_chains(links, {t.id: t.title for t in texts.values()}, max_hops=cfg.max_hops)
    order = sorted(chains, key=lambda c: _hash(f"{cfg.seed}\x00{c.id}"))
    per_source: Counter[str] = Counter()
    questions: list[PseudoQuestion] = []
    rejects: list[dict[str, str]] = []
    for chain in order:
        if len(questions) >= cfg.max_questions:
            break
        if per_source[chain.links[0].source] >= cfg.max_per_source:
            continue
        try:
            questions.append(make_question(chain, texts, cfg.question))
        except Reject as exc:
            rejects.append({"id": chain.id, "reason": exc.reason, "detail": exc.detail})
            continue
        per_source[chain.links[0].source] += 1
    stats = {
        "corpus_chunks": len(corpus),
        "links": len(links),
        "linking_chunks": len({link.source for link in links}),
        "chains": {"2": sum(len(c.links) == 1 for c in chains), "3": sum(len(c.links) == 2 for c in chains)},
        "questions": {
            "2": sum(len(q.hops) == 2 for q in questions),
            "3": sum(len(q.hops) == 3 for q in questions),
        },
        "rejects": dict(Counter(r["reason"] for r in rejects)),
    }
    return questions, texts, rejects, stats


def build_pseudo_sets(
    corpus: Corpus, retriever: Retriever, cfg: PseudoRowsConfig, *, progress: bool = True
) -> PseudoSets:
    questions, texts, rejects, stats = pseudo_questions(corpus, cfg, progress=progress)
    by_title: dict[str, set[str]] = defaultdict(set)
    for text in texts.values():
        for _, alias in title_aliases(text.title):
            by_title[alias.lower()].add(text.id)
    labeler: dict[str, list[dict[str, Any]]] = {TRAIN: [], VALIDATION: []}
    filt: dict[str, list[dict[str, Any]]] = {TRAIN: [], VALIDATION: []}
    validation: list[Example] = []
    singles: set[str] = set()
    queries = [join_words(h.query_words) for q in questions for h in q.hops]
    hits_all = _search(retriever, queries, cfg.negatives_top_k, progress)
    at = 0
    for q in questions:
        qid = QUESTION_PREFIX + q.id
        side = split_of(qid, validation_ratio=cfg.validation_ratio, seed=cfg.seed)
        same_entity = set(q.gold)
        for title in q.entity_titles:
            for _, alias in title_aliases(title):
                same_entity |= by_title.get(alias.lower(), set())
        for k, hop in enumerate(q.hops):
            rows, filter_row = _hop_rows(q, qid, k, hop, hits_all[at], same_entity, texts, cfg, rejects)
            at += 1
            labeler[side].extend(rows)
            if filter_row is not None:
                filt[side].append(filter_row)
        if side == VALIDATION:
            validation.append(
                Example(qid, q.question, [q.answer], q.gold, type=PSEUDO_TYPE, dataset=PSEUDO_DATASET)
            )
            single = join_words(q.single_words)
            if single not in singles:  # chains that end in the same paragraph ask it once
                singles.add(single)
                validation.append(
                    Example(
                        qid + SINGLE_SUFFIX,
                        single,
                        [q.answer],
                        [q.hops[-1].chunk_id],
                        type=PSEUDO_SINGLE_TYPE,
                        dataset=PSEUDO_DATASET,
                    )
                )
    stats["rows"] = {
        "labeler": {s: len(v) for s, v in labeler.items()},
        "filter": {s: len(v) for s, v in filt.items()},
        "validation_questions": sum(ex.type == PSEUDO_TYPE for ex in validation),
        "validation_single_questions": sum(ex.type == PSEUDO_SINGLE_TYPE for ex in validation),
    }
    stats["rejects"] = dict(Counter(r["reason"] for r in rejects))
    stats["config"] = asdict(cfg)
    return PseudoSets(labeler, filt, validation, rejects, stats)


def _hop_rows(
    q: Any,
    qid: str,
    k: int,
    hop: Any,
    hits: list[Any],
    same_entity: set[str],
    texts: dict[str, Any],
    cfg: PseudoRowsConfig,
    rejects: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """One hop of a pseudo question: its Labeler rows (the gold chunk under the hop's query, and
    under the question from the second hop on; then hard negatives from ``hits``) and its Filter
    row (None when the hop has no next query). A hop without usable negatives is recorded in
    ``rejects`` and keeps its positives."""
    meta = {"dataset": PSEUDO_DATASET, "type": "bridge", "idx": k + 1, "hop": k + 1, "rank": 0}
    row_id = f"{qid}#{k + 1}"
    queries_of_hop = [("pos", hop.query_words)]
    if k and cfg.question_positives:
        queries_of_hop.append(("qpos", q.question_words))
    rows = [
        LabelerRow(
            f"{row_id}/{suffix}",
            qid,
            list(words),
            hop.chunk_words,
            hop.labels,
            TAG_CONTINUE,
            hop.chunk_id,
            meta,
        ).to_dict()
        for suffix, words in queries_of_hop
    ]
    try:
        negatives = choose_negatives(hits, same_entity, [q.answer, *q.mentions], n=cfg.negatives_per_query)
    except Reject as exc:
        rejects.append({"id": row_id, "reason": exc.reason, "detail": exc.detail})
        negatives = []
    for j, neg in enumerate(negatives):
        if neg.hit.id not in texts:
            continue
        words = list(texts[neg.hit.id].words)
        suffix = "neg" if j == 0 else f"neg{j + 1}"
        rows.append(
            LabelerRow(
                f"{row_id}/{suffix}",
                qid,
                list(hop.query_words),
                words,
                [0] * len(words),
                TAG_TERMINATE,
                neg.hit.id,
                {**meta, "rank": neg.rank},
            ).to_dict()
        )
    filter_row = None
    if hop.filter_words is not None and hop.filter_labels is not None:
        filter_row = FilterRow(
            row_id, qid, hop.filter_words, hop.filter_labels, {**meta, "hop": k + 2}
        ).to_dict()
    return rows, filter_row


def pseudo_scoring_sets(
    questions: Sequence[Example], retriever: Retriever, prefix: str = ""
) -> list[ScoringSet]:
    """The pseudo-validation questions as the pseudo group's scoring sets: the chain questions and
    the single-paragraph ones apart, so that each weighs half of the group however many of either
    a corpus gave (an empty kind makes no set).

    Args:
        questions: ``PseudoSets.validation_questions`` (or ``pseudo_validation.jsonl`` read back).
        retriever: The search over the corpus the questions were made from.
        prefix: Put before each set's name (``"pseudo-validation"``, ``"pseudo-single"``).
    """
    chains = [ex for ex in questions if ex.type != PSEUDO_SINGLE_TYPE]
    singles = [ex for ex in questions if ex.type == PSEUDO_SINGLE_TYPE]
    named = ((f"{prefix}pseudo-validation", chains), (f"{prefix}pseudo-single", singles))
    return [ScoringSet(name, PSEUDO_GROUP, retriever, examples) for name, examples in named if examples]


def write_pseudo_sets(sets: PseudoSets, out_dir: str | Path) -> dict[str, Any]:
    """``labeler/`` and ``filter/`` as training folders, the validation questions, rejects, stats.
    The stats file is written last: its presence marks a complete set."""
    out = Path(out_dir)
    for split in (TRAIN, VALIDATION):
        write_jsonl(out / "labeler" / f"{split}.jsonl", sets.labeler[split])
        write_jsonl(out / "filter" / f"{split}.jsonl", sets.filter[split])
    write_jsonl(
        out / "pseudo_validation.jsonl", (ex.to_dict(with_raw=False) for ex in sets.validation_questions)
    )
    write_jsonl(out / "rejects.jsonl", sets.rejects)
    write_json_atomic(out / "stats.json", sets.stats, indent=2)
    return sets.stats


def _search(retriever: Retriever, queries: Sequence[str], k: int, progress: bool, batch: int = 256) -> list:
    out = []
    for i in tqdm(range(0, len(queries), batch), desc="negatives", disable=not progress):
        out.extend(retriever.search(list(queries[i : i + batch]), k))
    return out


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
