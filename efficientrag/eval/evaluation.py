"""``evaluate(cfg)``: one evaluation run from an experiment config, as ``efficientrag eval`` does it.

The steps, in one place: check what can be checked in a second (the method's name, its model
folders), read the data, load or build the index, check that the gold chunks are in it, build the
method, fingerprint the run, then bind the run folder, save its config and run the questions under
one lock (:func:`efficientrag.eval.runner.run_method`). A caller that built the method and retriever
itself (a benchmark sharing one index and one loaded generator across methods) enters at
:func:`evaluate_method` and gets the same fingerprint, folder and summary.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from efficientrag.errors import InvalidArgumentError
from efficientrag.eval.runner import run_method
from efficientrag.experiment.run_binding import PREDICTIONS_FILE, run_fingerprint

if TYPE_CHECKING:
    from efficientrag.baselines.base import GeneratorSource, Runnable
    from efficientrag.data.pooling import PooledDataset
    from efficientrag.data.schema import Example
    from efficientrag.experiment.config import ExperimentConfig
    from efficientrag.llm.generator import Generator
    from efficientrag.retrieval.base import Retriever


@dataclass(frozen=True)
class RunSummary(Mapping[str, Any]):
    """What one evaluation run reports. It reads as the mapping written to ``summary.json``
    (``summary["qa"]["f1"]``, ``summary["retrieval"]["10"]["recall"]``), and names its folder.

    Attributes:
        run_dir: the run folder (``predictions.jsonl``, ``summary.json``, ``table.md``, ``run.json``).
        metrics: the summary as written to ``summary.json``.
    """

    run_dir: Path
    metrics: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.metrics[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)

    @property
    def method(self) -> str:
        """The run's method name (``direct_r_qa`` for Direct-R's answering run)."""
        return str(self.metrics["method"])

    @property
    def n(self) -> int:
        """Questions with a prediction (this run's and earlier runs' of the same folder)."""
        return int(self.metrics["n"])

    @property
    def num_failed(self) -> int:
        """Questions the method failed on in this run (reasons in :attr:`errors_file`)."""
        return int(self.metrics["num_failed"])

    @property
    def errors_file(self) -> Path | None:
        """The file listing this run's failed questions and why (None when none failed)."""
        return Path(self.metrics["errors_file"]) if self.metrics.get("errors_file") else None

    @property
    def predictions_file(self) -> Path:
        """The run's ``predictions.jsonl`` (one record per question, with its trace)."""
        return self.run_dir / PREDICTIONS_FILE

    @property
    def table(self) -> str:
        """The run's Markdown table (``table.md``)."""
        return (self.run_dir / "table.md").read_text(encoding="utf-8")


def evaluate(
    cfg: ExperimentConfig,
    *,
    resume: bool | None = None,
    wait_for_lock: bool | None = None,
    generator: GeneratorSource | Generator | None = None,
    progress: bool = True,
) -> RunSummary:
    """Evaluate ``cfg.eval.method`` on the experiment's questions: ``efficientrag eval`` in Python.

    Args:
        cfg: the experiment (data, retriever, method settings, ``eval`` settings, generator).
        resume: continue the run folder's earlier predictions (made under the same fingerprint;
            another fingerprint is refused with :class:`~efficientrag.experiment.run_binding.StaleRunError`);
            False starts over. None: ``cfg.eval.resume``.
        wait_for_lock: when another process is writing the run folder, wait for it instead of
            raising :class:`~efficientrag.run_lock.FolderLockedError`. None: ``cfg.eval.wait_for_lock``.
        generator: the LLM (or a callable that builds it); None builds ``cfg.generator`` on first
            use, so a retrieval-only run loads none.
        progress: show a progress bar.

    Returns:
        The run's summary; its folder is ``cfg.eval_dir(method name)``.

    Raises:
        ValueError: an unknown method, or no question left after ``eval.limit`` and the id files.
        FileNotFoundError: a missing model folder or data file.
        efficientrag.eval.runner.RunAbortedError: the first questions all failed alike.
        efficientrag.eval.interrupts.RunInterrupted: SIGINT/SIGTERM (the batch in flight is written).
    """
    from efficientrag.baselines.registry import check_method_name
    from efficientrag.eval.gold_coverage import check_gold_coverage
    from efficientrag.experiment.assembly import (
        build_method,
        check_model_folders,
        search_backend,
        select_examples,
    )
    from efficientrag.experiment.prepared_data import read_data
    from efficientrag.experiment.run_binding import check_bindable

    # Everything that can be checked in a second is checked before the corpus is read and indexed.
    method_key = check_method_name(cfg.eval.method)
    models = check_model_folders(cfg, cfg.eval.method)
    resume = cfg.eval.resume if resume is None else resume
    prepared = read_data(cfg)
    pooled = prepared.pooled
    refuse_other_questions(cfg, method_key, pooled, resume=resume)
    examples = select_examples(cfg, pooled.examples)
    if not examples:
        raise InvalidArgumentError(
            f"no questions to evaluate in {cfg.data.path or cfg.data.dataset} after eval.limit / ids files "
            "(to ask one question of a corpus, use `efficientrag retrieve -q ...`)"
        )
    retriever = search_backend(cfg, pooled.corpus)
    check_gold_coverage(retriever, examples)
    method = build_method(
        cfg.eval.method, cfg, retriever, generator if generator is not None else lazy_generator(cfg)
    )
    # A run folder that refuses these inputs is refused before the pooled data is rewritten: the
    # work folder's data/ belongs to the runs made from it.
    check_bindable(
        cfg.eval_dir(method.name),
        run_fingerprint(cfg, method.name, retriever, pooled, models),
        resume=resume,
    )
    prepared.save()
    return evaluate_method(
        cfg,
        method,
        retriever,
        pooled,
        examples,
        models=models,
        resume=resume,
        wait_for_lock=wait_for_lock,
        progress=progress,
    )


def refuse_other_questions(
    cfg: ExperimentConfig, method_key: str, pooled: PooledDataset, *, resume: bool
) -> None:
    """Refuse a run folder bound to other questions before the index is built or the work folder's
    data/ rewritten, so that a refused run leaves every file as it was (the whole fingerprint is
    checked once the index is open).

    Args:
        cfg: The experiment.
        method_key: The method's registered name.
        pooled: The data read (not yet saved).
        resume: Whether earlier predictions would be resumed (False: nothing to refuse).
    """
    from efficientrag.baselines.registry import METHODS
    from efficientrag.experiment.run_binding import check_bindable, examples_digest

    run_dir = cfg.eval_dir(METHODS[method_key].run_name(cfg.eval.answer))
    check_bindable(run_dir, {"data": examples_digest(pooled.examples)}, resume=resume, only=("data",))


def evaluate_method(
    cfg: ExperimentConfig,
    method: Runnable,
    retriever: Retriever,
    pooled: PooledDataset,
    examples: Sequence[Example] | None = None,
    *,
    models: dict[str, str] | None = None,
    resume: bool | None = None,
    wait_for_lock: bool | None = None,
    meta: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> RunSummary:
    """:func:`evaluate` for a method and retriever already built from ``cfg`` (one index or one
    loaded generator shared by several methods): fingerprint, bind, save the config, run.

    Args:
        cfg: the experiment config the method was built from (fingerprinted and saved).
        method: the method, built by :func:`efficientrag.experiment.assembly.build_method`.
        retriever: the backend the method searches.
        pooled: the data ``examples`` come from (all of its questions are fingerprinted).
        examples: the questions to evaluate; None: ``cfg``'s selection of ``pooled.examples``.
        models: content hashes of the method's model folders; None: computed here.
        resume: as in :func:`evaluate`; None: ``cfg.eval.resume``.
        wait_for_lock: as in :func:`evaluate`; None: ``cfg.eval.wait_for_lock``.
        meta: extra summary keys (e.g. where the answers came from), over the dataset and
            retriever ones.
        progress: show a progress bar.

    Returns:
        The run's summary; its folder is ``cfg.eval_dir(method.name)``.
    """
    from efficientrag.experiment.assembly import check_model_folders, select_examples

    if examples is None:
        examples = select_examples(cfg, pooled.examples)
    if models is None:
        models = check_model_folders(cfg, method.name)
    run_dir = cfg.eval_dir(method.name)
    summary = run_method(
        method,
        examples,
        run_dir,
        ks=cfg.eval.ks,
        batch_size=cfg.eval.batch_size,
        resume=cfg.eval.resume if resume is None else resume,
        fingerprint=run_fingerprint(cfg, method.name, retriever, pooled, models),
        fail_fast_after=cfg.eval.fail_fast_after,
        meta={**run_meta(cfg, retriever), **(meta or {})},
        progress=progress,
        wait_for_lock=cfg.eval.wait_for_lock if wait_for_lock is None else wait_for_lock,
        config=cfg,
    )
    return RunSummary(run_dir=run_dir, metrics=summary)


def run_meta(cfg: ExperimentConfig, retriever: Retriever) -> dict[str, Any]:
    """What a summary says about the run's data and search, for reports to show."""
    return {
        "dataset": cfg.data.dataset,
        "retriever": cfg.retriever.kind,
        "encoder": cfg.retriever.encoder,
        # A Milvus collection: where it is and what it was filled from (no credentials).
        **({"collection": retriever.describe()} if hasattr(retriever, "describe") else {}),
    }


def lazy_generator(cfg: ExperimentConfig) -> GeneratorSource:
    """The configured generator, built on first use (retrieval-only methods never load one)."""
    from efficientrag.llm.factory import make_generator

    return lru_cache(maxsize=1)(lambda: make_generator(cfg.generator))
