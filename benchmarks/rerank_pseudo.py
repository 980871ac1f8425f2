"""A left-out corpus's reranker, chosen without one of its questions.

A fusion chosen on the training datasets' validation questions promises nothing on a corpus none
of them came from, and a reranker can rank that corpus worse than its search. A user adapting to
a new corpus has no gold there, but ``efficientrag adapt`` mines pseudo-validation questions from the corpus's own links
(``adapt.pseudo_rows``: chain questions, and the same question about the chain's last paragraph
alone). On those, each reranker row alone and fused, and the search's own order, are scored; the
best is what is deployed there, the search itself if no reranker beats it.

Each scorer reads a question's top ``max(NS)`` hits once; every row (``N`` in ``NS``, each fusion) is
that list's first ``N`` ordered as ``Rerank.run_batch`` orders them (``baselines.rerank.ranked_order``),
so the eight rows cost two scorings. Scores are cached beside the direction's validation runs,
bound to the index, the questions and both models.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rerank_methods import FUSION_K, FUSIONS, NS, SEARCH_ROW, Scores, rerankers
from retrieval_efficientrag import Pool
from tqdm.auto import tqdm

from efficientrag.baselines.rerank import RankFusion, ranked_order

# Questions of each kind scored, the first in the pseudo sets' own seeded order: a corpus gives about
# 200 of each, and two scorers at 50 pairs a question take about 4 minutes per 100 on 2 CPU cores.
PSEUDO_QUESTIONS = 100
# The fusion's constant every reranker row runs with.
RRF_K = RankFusion().rrf_k
# Questions a scoring call reads (their pairs go to the model in its own batches).
SCORE_BATCH = 16
# The scorers whose rows are read from one scoring each: row name prefix -> the row built to score.
SCORERS = {"rerank": f"rerank N={max(NS)}", "Labeler rerank": f"Labeler rerank N={max(NS)}"}


def pseudo_examples(pool: Pool) -> list:
    """The pseudo-validation questions ``efficientrag adapt`` mines from ``pool``'s corpus (its
    default settings; no question of the pool is read)."""
    from efficientrag.adapt.pseudo_rows import PseudoRowsConfig, build_pseudo_sets

    return build_pseudo_sets(
        pool.corpus, pool.retriever, PseudoRowsConfig(), progress=False
    ).validation_questions


def row_scores(
    gold: Sequence[Sequence[str]], ids: Sequence[Sequence[str]], scores: Sequence[Sequence[float]] | None
) -> dict[str, dict[str, float]]:
    """Mean (recall + all-gold) / 2 at ``FUSION_K``, in %, of the search's order (``scores`` None:
    ``{SEARCH_ROW: {"none": ...}}``) or of one scorer's rows at each N and fusion (``{"N=20":
    {"none": ..., "rrf": ...}, ...}``).

    Args:
        gold: Each question's gold chunk ids.
        ids: Each question's hit ids in the search's order (at least ``max(NS)`` where there are).
        scores: The scorer's score of each hit, or None for the search's own order.
    """
    from efficientrag.retrieval.metrics import all_gold, oracle_recall

    def mean(lists: list[list[str]]) -> float:
        top = [hit[:FUSION_K] for hit in lists]
        per = [(oracle_recall(t, g) + all_gold(t, g)) / 2 for t, g in zip(top, gold, strict=True)]
        return 100.0 * sum(per) / max(1, len(per))

    if scores is None:
        return {SEARCH_ROW: {"none": mean([list(i) for i in ids])}}
    out: dict[str, dict[str, float]] = {}
    for n in NS:
        for fusion in FUSIONS:
            ordered = [row_order(i, s, n, fusion) for i, s in zip(ids, scores, strict=True)]
            out.setdefault(f"N={n}", {})[fusion] = mean(ordered)
    return out


def row_order(
    ids: Sequence[str], scores: Sequence[float], n: int, fusion: str, rrf_k: int = RRF_K
) -> list[str]:
    """One question's list as the reranker row at ``n`` and ``fusion`` returns it: its first ``n``
    hits (``ids``, in the search's order, scored ``scores``) ordered as ``Rerank.run_batch`` orders
    them (``rrf_k``: the fusion's constant, the rows' default)."""
    order, _ = ranked_order(scores[:n], fusion, rrf_k)
    return [ids[i] for i in order]


def pseudo_scores(
    pool: Pool, models: Path, reranker: Path, out: Path, progress: bool = True
) -> dict[str, Any]:
    """Every reranker row alone and fused, and the search's own order, on ``pool``'s pseudo-validation
    questions: per question kind (chain, single paragraph) the mean of recall and all-gold at
    ``FUSION_K``; cached in ``out/scores.json``.

    Args:
        pool: The left-out set's pool; its corpus is mined, its questions are not read.
        models: The direction's models folder (the Labeler under ``labeler/best``).
        reranker: The cross-encoder's folder.
        out: The cache folder.
        progress: Show the scoring's progress.

    Returns:
        ``{"n": kind -> questions, "scores": kind -> row -> fusion -> score}``.
    """
    from efficientrag.adapt.pseudo_rows import pseudo_scoring_sets
    from efficientrag.experiment.assembly import model_digest
    from efficientrag.experiment.run_binding import index_and_data

    questions = pseudo_examples(pool)
    fingerprint = {
        **index_and_data(pool.retriever, questions),
        "models": {
            "labeler": model_digest("labeler", str(models / "labeler" / "best")),
            "reranker": model_digest("reranker", str(reranker)),
        },
        "questions": PSEUDO_QUESTIONS,
        "ns": list(NS),
        "fusions": list(FUSIONS),
        "k": FUSION_K,
        "rrf_k": RRF_K,
    }
    cache = out / "scores.json"
    if cache.is_file():
        kept = json.loads(cache.read_text(encoding="utf-8"))
        if kept.get("fingerprint") == fingerprint:
            return kept["result"]
    kinds = {s.name: s.examples[:PSEUDO_QUESTIONS] for s in pseudo_scoring_sets(questions, pool.retriever)}
    built = rerankers(pool, models, reranker, only=list(SCORERS.values()))
    for method, _ in built.values():
        method.setup()  # each model loaded once, for every kind of question
    result: dict[str, Any] = {"n": {k: len(v) for k, v in kinds.items()}, "scores": {}}
    for kind, examples in kinds.items():
        hits = pool.retriever.search([ex.question for ex in examples], max(NS))
        ids = [[h.chunk.id for h in hs] for hs in hits]
        gold = [ex.gold_chunk_ids for ex in examples]
        scores = row_scores(gold, ids, None)
        for prefix, row in SCORERS.items():
            own = _score_hits(
                built[row][0], [ex.question for ex in examples], hits, f"{kind}: {prefix}", progress
            )
            scores |= {f"{prefix} {n}": v for n, v in row_scores(gold, ids, own).items()}
        result["scores"][kind] = scores
    out.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps({"fingerprint": fingerprint, "result": result}, indent=1), encoding="utf-8")
    tmp.replace(cache)
    return result


def _score_hits(
    method: Any, questions: list[str], hits: list, desc: str, progress: bool
) -> list[list[float]]:
    out: list[list[float]] = []
    for lo in tqdm(range(0, len(questions), SCORE_BATCH), desc=desc, disable=not progress):
        batch = list(zip(questions[lo : lo + SCORE_BATCH], hits[lo : lo + SCORE_BATCH], strict=True))
        flat = iter(method.score([(q, h.chunk) for q, hs in batch for h in hs]))
        out.extend([next(flat) for _ in hs] for _, hs in batch)
    return out


def pseudo_mean(result: Mapping[str, Any]) -> Scores:
    """Row -> fusion -> the mean over the question kinds (each kind weighs half, as ``adapt``'s
    pseudo group weighs them), as one ``Scores`` file entry."""
    kinds = list(result["scores"].values())
    rows = kinds[0]
    return {
        row: {f: sum(k[row][f] for k in kinds) / len(kinds) for f in fusions} for row, fusions in rows.items()
    }


def choose_on_pseudo(mean: Mapping[str, Mapping[str, float]]) -> tuple[str, str]:
    """(row, fusion) with the highest pseudo score; the rerankers come first and the search's own
    order last, and a tie keeps the first."""
    candidates = [(r, f) for r in mean if r != SEARCH_ROW for f in FUSIONS] + [(SEARCH_ROW, "none")]
    return max(candidates, key=lambda c: (mean[c[0]][c[1]], -candidates.index(c)))
