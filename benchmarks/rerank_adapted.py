"""``retrieval_rerank.py --adapt``: the left-out rows after ``efficientrag adapt``.

The issue's own probe found the one place a reranker clearly beat the loop: HotpotQA left out,
after the direction's models were adapted to its corpus, the adapted Labeler used as a reranker of
the question's top 20 led the adapted loop by 6.7 recall and 12.0 all-gold points. This module
makes that row under the benchmark's rules:

1. The direction's Labeler and Filter adapted to the left-out dataset's pooled dev corpus
   (paragraphs only) with ``efficientrag adapt``'s option 1: pseudo rows from the corpus's title
   links, mixed with the direction's training set; adapt fine-tunes one pair per mix ratio of
   ``configs/adapt/minilm-cpu.yaml`` and keeps the best (or the given pair, if it scores higher).
2. The loop's setting chosen among the same candidates as the un-adapted loop's (the protocol
   setting and each ``--loop-variants`` change on top of it), scored as adapt scores its
   candidates: the corpus's pseudo-validation questions and the training files' validation
   questions (mean over the two groups of (recall + all-gold) / 2).
3. Reported over the same dev questions beside the same Direct-R and cross-encoder runs (the
   cross-encoder is not adapted: adapt has no recipe for it) and the adapted Labeler as a reranker.

No question of the left-out dataset, and none of its gold, chooses anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adaptation import PRESET, adapt_config, validation_sets
from retrieval_efficientrag import Pool, ProtocolOptions


def adapted_root(models: Path, target: str) -> Path:
    """Where a direction's adaptation to ``target`` and its evaluations live."""
    return models / "adapted" / target


def adapt_models(
    opts: ProtocolOptions,
    work: Path,
    models: Path,
    pools: dict[str, Pool],
    target: str,
    overrides: list[str],
) -> tuple[Path, dict[str, Any], list[Any]]:
    """Option 1 of ``efficientrag adapt`` for ``target`` (cached stage by stage by adapt itself).

    Returns:
        The folder holding the kept ``labeler/best`` and ``filter/best``, what adapt reported,
        and the sets it scored on (reused to choose the adapted loop's setting).
    """
    from efficientrag.adapt.job import build_judge, pseudo_stage, run_adapt
    from efficientrag.data.corpus import Corpus

    root = adapted_root(models, target)
    base = adapt_config(opts, PRESET, work, models, target, overrides, root / "adapt")
    sets = validation_sets(opts, work, pools)
    summary = run_adapt(base, extra_sets=sets)
    kept = Path(summary["labeler"])
    folder = kept.parents[1]
    if kept != folder / "labeler" / "best" or Path(summary["filter"]) != folder / "filter" / "best":
        raise ValueError(f"adapt kept {summary['labeler']} and {summary['filter']}: not one folder's pair")
    corpus = Corpus.load(base.corpus)
    pseudo_dir, _ = pseudo_stage(base, corpus, Path(base.work_dir), corpus.fingerprint())
    judge = build_judge(base, corpus, pseudo_dir, sets)
    return folder, summary, judge.sets


def choose_adapted_loop(
    opts: ProtocolOptions,
    adapted: Path,
    candidates: dict[str, list[str]],
    sets: list[Any],
    out: Path,
) -> tuple[tuple[str, list[str]], dict[str, float]]:
    """The candidate loop setting with the best adapt score of the ``adapted`` models on ``sets``."""
    from efficientrag.adapt.choice import Judge
    from efficientrag.config import load_config
    from efficientrag.pipeline.config import EfficientRAGConfig

    pair = {k: adapted / k / "best" for k in ("labeler", "filter")}
    scores = {}
    for label, overrides in candidates.items():
        loop = load_config(EfficientRAGConfig, None, overrides)
        judge = Judge(sets, loop, out / label, progress=not opts.quiet)
        scores[label] = judge.score(pair).score
    best = max(candidates, key=lambda c: scores[c])
    return (best, candidates[best]), scores


def adaptation_note(
    target: str, summary: dict[str, Any], setting: tuple[str, list[str]], scores: dict[str, float]
) -> str:
    """What adapt kept and which loop setting the adapted models chose, for the report."""
    corpus = summary.get("stages", {}).get("corpus", {})
    ratios = ", ".join(
        f"ratio {c.get('ratio')} {c['score']:.2f}" for c in corpus.get("candidates") or [] if "score" in c
    )
    kept = summary.get("kept", "adapted")
    label, overrides = setting
    return (
        f"**{target} after adaptation.** `efficientrag adapt` (option 1: pseudo rows from the dev "
        f"corpus's title links, no gold; `configs/adapt/minilm-cpu.yaml`) on its pooled dev corpus "
        f"kept the {kept} models{f' (candidates: {ratios})' if ratios else ''}. The adapted loop's "
        f"setting, chosen on the corpus's pseudo-validation questions and the training files' "
        f"validation questions (adapt's score: {', '.join(f'{k} {v:.2f}' for k, v in scores.items())}): "
        f"`{label}` = `{','.join(overrides)}`. The cross-encoder rows are the un-adapted ones "
        f"(adapt has no recipe for it); the Labeler rerank rows use the adapted Labeler."
    )
