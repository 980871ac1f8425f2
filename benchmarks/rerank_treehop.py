"""TreeHop's rows in ``retrieval_rerank.py`` when the search is dense (TreeHop updates query vectors,
so it needs a dense index): the issue's "EfficientRAG and TreeHop" beside the rerankers, in one run.

Trained and chosen exactly as ``retrieval_treehop.py`` does, on the same training questions, pools
and validation split, and sharing its cache (a model trained by either script serves both):

- the TreeHop network: every training variant, the best validation search score;
- its K and hops: of TreeHop@5/@10 with 2/3 hops, the largest gain over Direct-R on validation;
- TreeHop + EfficientRAG's Tagger (its Labeler the one this run trained): the protocol's grid and
  chunk budget (7), the best validation score. This is TreeHop at the loop's chunk count.

Both are single points on the dev tables (they keep their own chunk count, as the loop does).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import retrieval_treehop as treehop
import treehop_combination as combination

from efficientrag.fingerprint import folder_digest


@dataclass
class TreeHopRows:
    """What the dev evaluation needs: the trained network, its choices, and the combination.

    Args:
        model: the chosen TreeHop network.
        tag: its fingerprint (the dev runs' folder names it).
        chosen: the chosen label in ``retrieval_treehop.SETTINGS`` (its row's name).
        variant: the training variant that won on validation.
        combo_setting: (K, hops, tag threshold, floor) of TreeHop + Tagger, or None without a Labeler.
        labeler: the Labeler the combination tags with (memoized predictions), or None.
        labeler_dir: that Labeler's folder (loaded again, without the memo, to be timed).
        combo_key: the combination's folder name, naming both models' fingerprints.
    """

    model: Any
    tag: str
    chosen: str
    variant: str
    combo_setting: tuple | None
    labeler: Any
    labeler_dir: Path
    combo_key: str

    @property
    def combo_name(self) -> str:
        assert self.combo_setting is not None
        k, hops, threshold, floor = self.combo_setting
        return f"TreeHop@{k}, {hops} hops + Tagger (t{threshold}, floor {floor})"


def prepare(args: argparse.Namespace, work: Path, train_on: list[str]) -> TreeHopRows:
    """Train TreeHop (or find it trained) and make every choice on the validation questions."""
    from efficientrag.treehop.model import TreeHop

    # The protocol's options this benchmark runs with; TreeHop's own training at its defaults.
    opts = treehop.TreeHopOptions.from_args(args)
    model_dir, pools, metrics = treehop.train(opts, work, train_on)
    tag = folder_digest(model_dir, 12)
    model = TreeHop.from_pretrained(model_dir, device="cpu")
    chosen, _ = treehop.choose(opts, work, model, tag, pools)
    setting, _, labeler, combo_dir = treehop.choose_combination(opts, work, train_on, model, tag, pools)
    labeler_dir = work / "models" / "+".join(train_on) / "labeler" / "best"
    key = combo_dir.name if combo_dir is not None else ""
    return TreeHopRows(model, tag, chosen, metrics["variant"], setting, labeler, labeler_dir, key)


def note(rows: TreeHopRows) -> str:
    """The report's line on what TreeHop chose."""
    text = (
        f"TreeHop (dense search only): network `{rows.tag}` (variant {rows.variant}), setting "
        f"{rows.chosen}, both chosen on the same validation questions as in `retrieval_treehop.py`"
    )
    if rows.combo_setting is not None:
        text += f"; {rows.combo_name}, chunk budget {combination.BUDGET}, chosen there too"
    return text + "."


def evaluate(rows: TreeHopRows, pool: Any, examples: list, out: Path) -> dict[str, tuple[dict, Path]]:
    """TreeHop's chosen setting and TreeHop + Tagger on ``examples``, each cached under ``out``.

    Returns:
        Row name -> (the run's summary, its folder).
    """
    k, hops = treehop.SETTINGS[rows.chosen]
    folder = out / "treehop" / rows.tag
    label = treehop.slug(rows.chosen)
    runs = {
        rows.chosen: (
            treehop.evaluate_treehop(pool, rows.model, examples, label, folder, top_k=k, hops=hops),
            folder / label,
        )
    }
    if rows.combo_setting is not None:
        combo_out = out / "treehop" / rows.combo_key
        summary = combination.evaluate(
            pool, rows.model, rows.labeler, examples, combo_out, rows.combo_setting
        )
        runs[rows.combo_name] = (summary, combination.run_folder(combo_out, rows.combo_setting))
    return runs


def timers(
    rows: TreeHopRows, pool: Any, questions: list[str], batches: list[slice]
) -> dict[str, Callable[[], Any]]:
    """Row name -> one pass over ``questions`` in ``batches``, models loaded now (not timed) and
    the Labeler without its prediction memo, as ``time_side_by_side`` times the other methods."""
    from efficientrag.models import Labeler
    from efficientrag.treehop.config import TreeHopRetrievalConfig
    from efficientrag.treehop.retriever import TreeHopRetriever
    from efficientrag.treehop.tagged import TaggedTreeHop, TagSettings

    k, hops = treehop.SETTINGS[rows.chosen]
    search = TreeHopRetriever(pool.retriever, rows.model, TreeHopRetrievalConfig(top_k=k, hops=hops))
    out: dict[str, Callable[[], Any]] = {
        rows.chosen: lambda: [search.retrieve_batch(questions[b]) for b in batches]
    }
    if rows.combo_setting is not None:
        ck, chops, threshold, floor = rows.combo_setting
        tagged = TaggedTreeHop(
            TreeHopRetriever(pool.retriever, rows.model, TreeHopRetrievalConfig(top_k=ck, hops=chops)),
            Labeler.from_pretrained(rows.labeler_dir, device="cpu"),
            TagSettings(tag_threshold=threshold, floor_k=floor, chunk_budget=combination.BUDGET),
        )
        out[rows.combo_name] = lambda: [tagged.retrieve_batch(questions[b]) for b in batches]
    return out
