"""``run_synthesis(cfg)``: the whole synthesis run, stage by stage, resumable.

decompose -> label -> align -> next_hop -> negatives -> build. Each stage reads the previous
stage's output file (restricted to this run's questions) and writes its own through the stage
runner, so a crashed or interrupted run picks up where it stopped; ``build`` writes the
Labeler/Filter training sets and ``stats.json``. All stages run in one event loop, so an LLM
teacher's async client lives through the whole run. Entry points (``synth/run.py``,
``efficientrag synth``) only parse a config and call this.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from pathlib import Path
from typing import Any

from efficientrag.config import save_config
from efficientrag.config_values import to_dict
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Example
from efficientrag.errors import InvalidArgumentError
from efficientrag.jsonl import read_records
from efficientrag.retrieval.base import Retriever
from efficientrag.synth.build import BuiltSets, build_rows, write_sets
from efficientrag.synth.config import SynthConfig
from efficientrag.synth.records import OUTPUT_FILES, STAGES
from efficientrag.synth.stage import (
    StageError,
    StageOptions,
    StageResult,
    clear_stage,
    run_stage_async,
    stage_paths,
    write_manifest,
)
from efficientrag.synth.stats import StageOutputs, synthesis_stats
from efficientrag.synth.steps import (
    StepContext,
    align_step,
    decompose_step,
    label_inputs,
    label_step,
    negatives_inputs,
    negatives_step,
    next_hop_depends_on,
    next_hop_inputs,
    next_hop_step,
)
from efficientrag.synth.teacher import Teacher, get_teacher

log = logging.getLogger(__name__)

# Each stage reads the output of the one before it.
UPSTREAM = dict(zip(STAGES[1:], STAGES[:-1], strict=True))


def run_synthesis(cfg: SynthConfig, **held: Any) -> dict[str, Any]:
    """:func:`run_synthesis_async` in an event loop of its own (``held``: its keywords).

    Args:
        cfg: The run's settings.
        **held: What the caller already holds: ``corpus`` and ``examples`` (both or neither),
            ``retriever``, ``teacher``.

    Returns:
        What ``stats.json`` holds (plus this run's per-stage counts), or only the per-stage
        counts when ``build`` was not among the stages.
    """
    return asyncio.run(run_synthesis_async(cfg, **held))


async def run_synthesis_async(
    cfg: SynthConfig,
    *,
    corpus: Corpus | None = None,
    examples: list[Example] | None = None,
    retriever: Retriever | None = None,
    teacher: Teacher | None = None,
) -> dict[str, Any]:
    """Run the configured stages; returns what ``stats.json`` holds (plus this run's per-stage
    counts), or only the per-stage counts when ``build`` was not among the stages.

    ``corpus``/``examples`` replace loading ``cfg.data`` (both or neither), ``retriever``
    replaces building ``cfg.retriever``, ``teacher`` replaces ``cfg.teacher``: for callers that
    already hold them (and tests).
    """
    if (corpus is None) != (examples is None):
        raise InvalidArgumentError("pass both corpus and examples, or neither")
    if corpus is None:
        from efficientrag.data.loader import load_data, report_skipped

        pooled = load_data(cfg.data)
        report_skipped(pooled)
        corpus, examples = pooled.corpus, pooled.examples
    assert examples is not None
    run = _Run(cfg, corpus, list(examples), retriever, teacher or get_teacher(cfg, corpus))
    try:
        return await run.all()
    finally:
        await _close(run.teacher)


class _Run:
    def __init__(
        self,
        cfg: SynthConfig,
        corpus: Corpus,
        examples: list[Example],
        retriever: Retriever | None,
        teacher: Teacher,
    ) -> None:
        self.cfg = cfg
        self.corpus = corpus
        self.examples = examples[: cfg.limit] if cfg.limit else examples
        self.qids = [e.id for e in self.examples]
        self.by_id = {e.id: e for e in self.examples}
        if len(self.by_id) != len(self.qids):
            raise InvalidArgumentError("example ids are not unique")
        self.retriever = retriever
        self.teacher = teacher
        self.out = Path(cfg.out_dir)
        self.ctx = StepContext(
            corpus=corpus,
            examples=self.by_id,
            teacher=teacher,
            min_align_rate=cfg.min_align_rate,
            align_window=cfg.align_window,
            use_lemmas=cfg.use_lemmas,
        )
        self.teacher_params = dict(teacher.params())
        self.results: dict[str, StageResult] = {}

    async def all(self) -> dict[str, Any]:
        self.out.mkdir(parents=True, exist_ok=True)
        save_config(self.cfg, self.out / "config.yaml")
        selected = [s for s in STAGES if s in self.cfg.stages]
        if self.cfg.force and selected:
            for stage in STAGES[STAGES.index(selected[0]) :]:
                clear_stage(self.out, stage, OUTPUT_FILES.get(stage))
            (self.out / "stats.json").unlink(missing_ok=True)
            log.info("force: cleared %s and later stages in %s", selected[0], self.out)
        for stage in selected:
            if stage in UPSTREAM:
                self._require_upstream(stage, selected)
            if stage == "build":
                return self.build()
            self.results[stage] = await getattr(self, stage)()
        return {"out_dir": str(self.out), "stages": {k: v.to_dict() for k, v in self.results.items()}}

    # -- stages -------------------------------------------------------------------------------

    async def decompose(self) -> StageResult:
        params = {**self.teacher_params, "dataset": self.cfg.data.dataset, "path": self.cfg.data.path}
        return await self._stage(
            "decompose", self.examples, decompose_step(self.ctx), key=lambda e: e.id, params=params, llm=True
        )

    async def label(self) -> StageResult:
        decomposed = self.read("decompose")
        items = label_inputs(decomposed[q] for q in self.qids if q in decomposed)
        return await self._stage("label", items, label_step(self.ctx), params=self.teacher_params, llm=True)

    async def align(self) -> StageResult:
        params = {
            "min_align_rate": self.cfg.min_align_rate,
            "window": self.cfg.align_window,
            "lemmas": self.cfg.use_lemmas,
        }
        return await self._stage(
            "align", list(self.read("label").values()), align_step(self.ctx), params=params
        )

    async def next_hop(self) -> StageResult:
        decomposed = self.read("decompose")
        items = next_hop_inputs((decomposed[q] for q in self.qids if q in decomposed), self.read("align"))
        return await self._stage(
            "next_hop",
            items,
            next_hop_step(self.ctx),
            depends_on=next_hop_depends_on,
            params={**self.teacher_params, "min_align_rate": self.cfg.min_align_rate},
            llm=True,
        )

    async def negatives(self) -> StageResult:
        cfg = self.cfg
        items = negatives_inputs(self.read("next_hop").values(), self.read("decompose"), self.by_id)
        finished = self._finished_ids("negatives")
        search = self.retriever
        if search is None and any(it["id"] not in finished for it in items):
            search = self._build_retriever()
        fn = (
            negatives_step(
                search,
                top_k=cfg.negatives_top_k,
                exclude_answer=cfg.negatives_exclude_answer,
                per_query=cfg.negatives_per_query,
            )
            if search is not None
            else _nothing_pending
        )
        searched = to_dict(cfg.retriever, checks=False) if self.retriever is None else None
        params = {
            "retriever": searched or type(self.retriever).__name__,
            "corpus": self.corpus.fingerprint(),
            "top_k": cfg.negatives_top_k,
            "exclude_answer": cfg.negatives_exclude_answer,
            "per_query": cfg.negatives_per_query,
        }
        return await self._stage("negatives", items, fn, batch_size=cfg.negatives_batch_size, params=params)

    def build(self) -> dict[str, Any]:
        cfg = self.cfg
        got = StageOutputs(*(self.read(stage) for stage in ("decompose", "align", "next_hop", "negatives")))
        built = build_rows(
            self.qids,
            got.decomposed,
            got.aligned,
            got.next_hop,
            got.negatives,
            validation_ratio=cfg.validation_ratio,
            seed=cfg.seed,
            question_positives=cfg.question_positives,
        )
        files = write_sets(built, self.out)
        rejects = {s: read_records(stage_paths(self.out, s)["rejects"]) for s in STAGES if s != "build"}
        dataset_of = {q: self.by_id[q].dataset for q in self.qids}
        per_dataset = synthesis_stats(self.qids, dataset_of, got, rejects, built)
        manifests = {}
        for stage in STAGES[:-1]:
            done = stage_paths(self.out, stage)["done"]
            if done.is_file():
                manifests[stage] = json.loads(done.read_text(encoding="utf-8"))
        stats = {
            "out_dir": str(self.out),
            "teacher": cfg.teacher,
            "questions": len(self.qids),
            "files": {k: str(Path(v).relative_to(self.out)) for k, v in files.items()},
            "datasets": per_dataset,
            "stages": manifests,
        }
        write_manifest(self.out / "stats.json", stats)
        write_manifest(
            stage_paths(self.out, "build")["done"],
            {"stage": "build", "files": stats["files"], "rows": _row_counts(built)},
        )
        stats["stages"] = {**manifests, **{k: v.to_dict() for k, v in self.results.items()}}
        return stats

    # -- helpers ------------------------------------------------------------------------------

    async def _stage(self, name: str, items: Any, fn: Any, *, llm: bool = False, **kw: Any) -> StageResult:
        options = StageOptions(
            output=OUTPUT_FILES[name],
            concurrency=self.cfg.concurrency if llm else 1,
            retry_errors=self.cfg.retry_errors,
            max_errors=self.cfg.max_errors,
            progress=self.cfg.progress,
            postfix=self.teacher.progress,
        )
        return await run_stage_async(name, items, fn, self.out, options, **kw)

    def read(self, stage: str) -> dict[str, dict[str, Any]]:
        """The output of ``stage`` for this run's questions, by record id."""
        qset = set(self.qids)
        return {
            r["id"]: r
            for r in read_records(self.out / OUTPUT_FILES[stage])
            if (r.get("question_id") or r["id"]) in qset
        }

    def _require_upstream(self, stage: str, selected: list[str]) -> None:
        up = UPSTREAM[stage]
        if up in selected:
            return
        if not stage_paths(self.out, up)["done"].is_file():
            raise StageError(
                f"stage {stage!r} reads the output of {up!r}, which has not completed in {self.out} "
                f"(no {up}.done.json); run it first (stages={up},{stage})"
            )

    def _finished_ids(self, stage: str) -> set[str]:
        paths = stage_paths(self.out, stage, OUTPUT_FILES.get(stage))
        return {str(r["id"]) for p in (paths["output"], paths["rejects"]) for r in read_records(p)}

    def _build_retriever(self) -> Retriever:
        from efficientrag.retrieval import build_retriever

        cfg = self.cfg
        index_dir = Path(cfg.retriever.index_dir) if cfg.retriever.index_dir else self.out / "index"
        return build_retriever(cfg.retriever, self.corpus, index_dir=index_dir, show_progress=cfg.progress)


def _nothing_pending(items: list[Any]) -> list[Any]:
    raise StageError("no retriever was built although records are pending")


async def _close(teacher: Teacher) -> None:
    """Let a teacher release what it holds (an LLM client's connections), if it has ``aclose``
    or ``close``."""
    for name in ("aclose", "close"):
        closer = getattr(teacher, name, None)
        if callable(closer):
            result = closer()
            if inspect.isawaitable(result):
                await result
            return


def _row_counts(built: BuiltSets) -> dict[str, int]:
    return {
        f"{m}/{s}": len(rows)
        for m, sets in (("labeler", built.labeler), ("filter", built.filter))
        for s, rows in sets.items()
    }
