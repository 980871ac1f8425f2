"""The resumable stage runner every synthesis stage (annotation or LLM) goes through.

A stage maps input items to output records, one record per item, with the item's id. Outputs are
appended to a JSONL file one flushed line at a time; a dropped item is appended to the stage's
rejects file with the reason. On restart, ids already in either file are skipped, so a killed run
loses at most the records in flight and never writes one twice. One process runs stages in a
folder at a time (:mod:`efficientrag.run_lock`; another is refused naming it, or waits with
``wait_for_lock``), and a file that already holds an id twice keeps the first on resume. Only when
every input is accounted for is ``<stage>.done.json`` written (atomically), with the counts.

``fn`` may be a plain function or return an awaitable (an LLM call); awaitables run concurrently
up to ``concurrency``. Items that need other items' outputs (a next-hop query needs its
dependency's) name them through ``depends_on`` and are processed in rounds.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from efficientrag.atomic import write_text_atomic
from efficientrag.errors import EfficientRAGError, InvalidArgumentError
from efficientrag.jsonl import JsonlAppender, drop_duplicate_ids, read_records, write_jsonl
from efficientrag.run_lock import FolderLockedError, folder_lock
from efficientrag.synth.records import Reject

ERROR_PREFIX = "error: "
R_DEP_REJECTED = "dependency rejected"
R_DEP_MISSING = "dependency unavailable"
R_DEP_CYCLE = "dependency cycle"
# Output lines are flushed per record (a killed run keeps them all) and fsynced at most this
# often (a power loss costs at most the last second's records, redone on resume); an fsync per
# record would block the event loop for 1-2 ms per LLM call.
SYNC_SECONDS = 1.0
# The last words of a refusal to run a stage in a folder another process is writing.
LOCK_HINT = "wait for it to finish, or run the stage with wait_for_lock=True to run after it"


class StageError(EfficientRAGError, RuntimeError):
    """A stage cannot run (or must stop): its message says why and what to do."""


@dataclass
class StageResult:
    name: str
    output: Path
    rejects: Path
    inputs: int
    written: int  # outputs for this run's inputs (including ones from earlier runs)
    rejected: int
    new_written: int = 0
    new_rejected: int = 0
    errors: int = 0  # of new_rejected, unexpected exceptions
    reasons: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    complete: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.name,
            "output": self.output.name,
            "rejects": self.rejects.name,
            "inputs": self.inputs,
            "written": self.written,
            "rejected": self.rejected,
            "new_written": self.new_written,
            "new_rejected": self.new_rejected,
            "errors": self.errors,
            "reasons": dict(sorted(self.reasons.items())),
            "seconds": round(self.seconds, 3),
            "complete": self.complete,
        }


def stage_paths(out_dir: str | Path, name: str, output: str | None = None) -> dict[str, Path]:
    out_dir = Path(out_dir)
    return {
        "output": out_dir / (output or f"{name}.jsonl"),
        "rejects": out_dir / f"{name}.rejects.jsonl",
        "done": out_dir / f"{name}.done.json",
        "meta": out_dir / f"{name}.meta.json",
    }


def clear_stage(out_dir: str | Path, name: str, output: str | None = None) -> None:
    for path in stage_paths(out_dir, name, output).values():
        path.unlink(missing_ok=True)


def then(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn(value)``, or when ``value`` is awaitable, an awaitable of it: lets a stage function be
    written once for sync (annotation) and async (LLM) teachers."""
    if inspect.isawaitable(value):

        async def chained() -> Any:
            return fn(await value)

        return chained()
    return fn(value)


def _default_key(item: Any) -> str:
    if isinstance(item, Mapping):
        return str(item["id"])
    return str(item.id)


@dataclass(frozen=True)
class StageOptions:
    """How :func:`run_stage` runs a stage; every field is also a keyword of ``run_stage``.

    ``fn(item)`` (or ``fn(item, dep_records)`` with ``depends_on``; or ``fn(items)`` returning a
    list of records/:class:`Reject` with ``batch_size``) returns the output record, a dict, or an
    awaitable of it, or raises :class:`Reject`. Any other exception becomes a reject with reason
    ``"error: <ExceptionType>"`` and the stage goes on (up to ``max_errors`` new ones).

    Attributes:
        output: The output file's name in ``out_dir`` (None: ``<name>.jsonl``).
        key: An input's id (default: its ``id`` key or attribute).
        depends_on: The ids whose outputs an input needs (None: no dependencies).
        concurrency: Awaitables in flight at once.
        batch_size: ``fn`` takes lists of this many inputs (None: one at a time).
        force: Start the stage over (otherwise resuming with other ``params`` is refused).
        retry_errors: Re-run items an exception rejected in an earlier run.
        max_errors: New unexpected errors after which the stage stops (None: never).
        params: The settings the outputs depend on (checked on resume).
        postfix: Extra progress-bar fields, called as the bar updates.
        progress: Show a progress bar.
        wait_for_lock: Wait for another process writing ``out_dir`` (else refuse, naming it).
    """

    output: str | None = None  # output file name in out_dir (default <name>.jsonl)
    key: Callable[[Any], str] = _default_key  # an input's id
    depends_on: Callable[[Any], Sequence[str]] | None = None  # ids whose outputs an input needs
    concurrency: int = 1  # awaitables in flight
    batch_size: int | None = None  # fn takes lists of this many inputs
    # Start the stage over (otherwise resuming with other ``params`` is refused).
    force: bool = False
    # Re-run items rejected by an exception (e.g. an LLM endpoint that was down).
    retry_errors: bool = False
    max_errors: int | None = None  # new unexpected errors after which the stage stops
    params: Mapping[str, Any] | None = None  # the settings the outputs depend on
    postfix: Callable[[], Mapping[str, Any]] | None = None  # extra progress-bar fields
    progress: bool = True
    # Another process writing ``out_dir``: wait for it (else the stage is refused, naming it).
    wait_for_lock: bool = False


def run_stage(*args: Any, **kwargs: Any) -> StageResult:
    """``run_stage(name, inputs, fn, out_dir, options=None, **settings)``: run one stage to
    completion (or resume it) in an event loop of its own; :func:`run_stage_async` is the same
    for callers already inside one. See the module docstring.

    Args:
        *args: :func:`run_stage_async`'s positional arguments.
        **kwargs: Its keyword arguments.

    Returns:
        The stage's counts.
    """
    return asyncio.run(run_stage_async(*args, **kwargs))


async def run_stage_async(
    name: str,
    inputs: Iterable[Any],
    fn: Callable[..., Any],
    out_dir: str | Path,
    options: StageOptions | None = None,
    **settings: Any,
) -> StageResult:
    """Run stage ``name``: ``fn`` over ``inputs`` into ``out_dir``; ``settings`` are
    :class:`StageOptions` fields that replace those of ``options``.

    Args:
        name: The stage's name (its files are ``<name>.rejects.jsonl``, ``<name>.done.json`` ...).
        inputs: The items, each with a unique id (``options.key``).
        fn: The stage function (see :class:`StageOptions`).
        out_dir: The folder the stage writes in.
        options: How to run it (None: the defaults).
        **settings: :class:`StageOptions` fields overriding ``options``.

    Returns:
        Inputs, outputs and rejects (all, and this run's), reject reasons, seconds; ``complete``
        once every input is accounted for.

    Raises:
        StageError: Another process holds the folder, an input id repeats, the stage was run
            before with other ``params`` (without ``force``), or more than ``max_errors`` new
            unexpected errors occurred.
        ValueError: ``concurrency`` or ``batch_size`` is below 1.
    """
    opts = replace(options or StageOptions(), **settings)
    if opts.concurrency < 1:
        raise InvalidArgumentError(f"stage {name}: concurrency must be >= 1, got {opts.concurrency}")
    if opts.batch_size is not None and opts.batch_size < 1:
        raise InvalidArgumentError(f"stage {name}: batch_size must be >= 1, got {opts.batch_size}")
    try:
        with folder_lock(out_dir, wait=opts.wait_for_lock, what="synthesis folder", hint=LOCK_HINT):
            return await _run_locked(name, inputs, fn, Path(out_dir), opts)
    except FolderLockedError as exc:
        raise StageError(f"stage {name}: {exc}") from exc


async def _run_locked(
    name: str, inputs: Iterable[Any], fn: Callable[..., Any], out_dir: Path, opts: StageOptions
) -> StageResult:
    """:func:`run_stage_async` holding ``out_dir``'s lock."""
    paths = stage_paths(out_dir, name, opts.output)
    if opts.force:
        clear_stage(out_dir, name, opts.output)
    _check_params(name, paths["meta"], opts.params)

    items: dict[str, Any] = {}
    for item in inputs:
        item_id = opts.key(item)
        if item_id in items:
            raise StageError(f"stage {name}: input id {item_id!r} appears twice")
        items[item_id] = item
    if opts.retry_errors:
        _drop_error_rejects(paths["rejects"])

    runner = _Runner(name, fn, paths, items, opts)
    if runner.pending:
        # The outputs are about to change: a manifest from an earlier, smaller run no longer holds.
        paths["done"].unlink(missing_ok=True)
    start = time.monotonic()
    try:
        await runner.run()
    finally:
        runner.close()
    result = runner.result(time.monotonic() - start)
    result.complete = True
    write_manifest(paths["done"], {**result.to_dict(), "params": dict(opts.params or {})})
    return result


class _Runner:
    """One run of a stage: what earlier runs finished, the pending items, the open output files."""

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        paths: dict[str, Path],
        items: dict[str, Any],
        opts: StageOptions,
    ) -> None:
        self.name = name
        self.fn = fn
        self.paths = paths
        self.items = items
        self.depends_on = opts.depends_on
        self.concurrency = opts.concurrency
        self.batch_size = opts.batch_size
        self.max_errors = opts.max_errors
        self.postfix = opts.postfix
        # What earlier runs left: outputs (kept whole only when later items depend on them) and
        # rejects, each id once (two writers at once, before folders were locked, wrote some twice).
        drop_duplicate_ids(paths["output"])
        drop_duplicate_ids(paths["rejects"])
        self.outputs: dict[str, dict[str, Any]] = {}
        self.done_ids: set[str] = set()
        for rec in read_records(paths["output"]):
            rid = str(rec.get("id"))
            self.done_ids.add(rid)
            if self.depends_on is not None:
                self.outputs[rid] = rec
        self.rejected_ids = {
            str(r.get("id")): str(r.get("reason", "")) for r in read_records(paths["rejects"])
        }
        self.new_written = 0
        self.new_rejected = 0
        self.errors = 0
        self.reasons: Counter[str] = Counter()
        self.out = JsonlAppender(paths["output"], sync_seconds=SYNC_SECONDS)
        self.rej = JsonlAppender(paths["rejects"], sync_seconds=SYNC_SECONDS)
        self.pending = [i for i in items if i not in self.done_ids and i not in self.rejected_ids]
        self.bar = tqdm(
            total=len(items),
            initial=len(items) - len(self.pending),
            desc=name,
            unit="rec",
            disable=not opts.progress,
            dynamic_ncols=True,
        )

    def close(self) -> None:
        self.out.close()
        self.rej.close()
        self.bar.close()

    async def run(self) -> None:
        if self.depends_on is None:
            await self._process(self.pending)
            return
        remaining = list(self.pending)
        while remaining:
            ready, waiting = [], []
            for item_id in remaining:
                state = self._dependency_state(item_id)
                if state == "ready":
                    ready.append(item_id)
                elif state == "wait":
                    waiting.append(item_id)
                else:
                    reason, detail = state
                    self._reject(item_id, reason, detail)
            if not ready:
                for item_id in waiting:
                    self._reject(item_id, R_DEP_CYCLE, "its dependencies never became available")
                return
            await self._process(ready)
            remaining = waiting

    def _dependency_state(self, item_id: str) -> str | tuple[str, str]:
        assert self.depends_on is not None
        for dep in self.depends_on(self.items[item_id]):
            if dep in self.done_ids:
                continue
            if dep in self.rejected_ids:
                return (R_DEP_REJECTED, f"{dep}: {self.rejected_ids[dep]}")
            if dep in self.items:
                return "wait"
            return (R_DEP_MISSING, f"{dep} is neither an input nor an output of this stage")
        return "ready"

    async def _process(self, ids: list[str]) -> None:
        if self.batch_size:
            groups = [ids[i : i + self.batch_size] for i in range(0, len(ids), self.batch_size)]
        else:
            groups = [[i] for i in ids]
        if self.concurrency == 1 or len(groups) <= 1:
            for group in groups:
                await self._run_group(group)
            return
        # A fixed pool of workers pulling from one iterator: `concurrency` tasks in flight, not
        # one task per record (a stage may hold 100k records).
        pending = iter(groups)

        async def worker() -> None:
            for group in pending:
                await self._run_group(group)

        workers = [asyncio.ensure_future(worker()) for _ in range(min(self.concurrency, len(groups)))]
        try:
            await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for w in workers:
                if not w.done():
                    w.cancel()
            # Wait for the cancelled ones and retrieve every outcome: a task whose exception is
            # never retrieved gets logged, with a formatted traceback, whenever it is collected.
            await asyncio.gather(*workers, return_exceptions=True)
        for w in workers:
            if not w.cancelled() and w.exception() is not None:
                raise w.exception()  # type: ignore[misc]

    async def _run_group(self, group: list[str]) -> None:
        if self.batch_size:
            try:
                results = self.fn([self.items[i] for i in group])
                if inspect.isawaitable(results):
                    results = await results
                results = list(results)
                if len(results) != len(group):
                    raise StageError(f"batch function returned {len(results)} results for {len(group)} items")
            except Reject as rej:
                results = [rej] * len(group)
            except Exception as exc:  # noqa: BLE001 - becomes a reject, the run goes on
                results = [exc] * len(group)
            for item_id, res in zip(group, results, strict=True):
                self._settle(item_id, res)
            return
        item_id = group[0]
        item = self.items[item_id]
        try:
            if self.depends_on is not None:
                deps = [self.outputs[d] for d in self.depends_on(item)]
                res = self.fn(item, deps)
            else:
                res = self.fn(item)
            if inspect.isawaitable(res):
                res = await res
        except Reject as rej:
            res = rej
        except Exception as exc:  # noqa: BLE001 - becomes a reject, the run goes on
            res = exc
        self._settle(item_id, res)

    def _settle(self, item_id: str, res: Any) -> None:
        if isinstance(res, Reject):
            self._reject(item_id, res.reason, res.detail)
        elif isinstance(res, BaseException):
            self.errors += 1
            self._reject(item_id, f"{ERROR_PREFIX}{type(res).__name__}", str(res)[:500])
            if self.max_errors is not None and self.errors > self.max_errors:
                raise StageError(
                    f"stage {self.name}: more than {self.max_errors} unexpected errors in this run "
                    f"(last: {type(res).__name__}: {res}); see {self.paths['rejects']}. Fix the cause "
                    "and rerun with retry_errors to redo them."
                )
        elif isinstance(res, Mapping):
            rec = dict(res)
            rid = str(rec.setdefault("id", item_id))
            if rid != item_id:
                self.errors += 1
                self._reject(item_id, f"{ERROR_PREFIX}StageError", f"output id {rid!r} for input {item_id!r}")
                return
            self.out.write(rec)
            self.done_ids.add(item_id)
            if self.depends_on is not None:
                self.outputs[item_id] = rec
            self.new_written += 1
            self.bar.update(1)
            self._refresh()
        else:
            self.errors += 1
            self._reject(item_id, f"{ERROR_PREFIX}TypeError", f"stage function returned {type(res).__name__}")

    def _reject(self, item_id: str, reason: str, detail: str) -> None:
        self.rej.write({"id": item_id, "stage": self.name, "reason": reason, "detail": detail})
        self.rejected_ids[item_id] = reason
        self.new_rejected += 1
        self.reasons[reason] += 1
        self.bar.update(1)
        self._refresh()

    def _refresh(self) -> None:
        info: dict[str, Any] = {"ok": self.new_written, "rej": self.new_rejected}
        if self.errors:
            info["err"] = self.errors
        if self.postfix is not None:
            info.update(self.postfix())
        self.bar.set_postfix(info, refresh=False)

    def result(self, seconds: float) -> StageResult:
        ids = set(self.items)
        reasons: Counter[str] = Counter(r for i, r in self.rejected_ids.items() if i in ids)
        return StageResult(
            name=self.name,
            output=self.paths["output"],
            rejects=self.paths["rejects"],
            inputs=len(self.items),
            written=len(ids & self.done_ids),
            rejected=sum(reasons.values()),
            new_written=self.new_written,
            new_rejected=self.new_rejected,
            errors=self.errors,
            reasons=dict(reasons),
            seconds=seconds,
        )


def _check_params(name: str, meta_path: Path, params: Mapping[str, Any] | None) -> None:
    current = json.loads(json.dumps(dict(params or {}), default=str))
    if meta_path.is_file():
        previous = json.loads(meta_path.read_text(encoding="utf-8")).get("params", {})
        if previous != current:
            changed = sorted(k for k in set(previous) | set(current) if previous.get(k) != current.get(k))
            diffs = ", ".join(f"{k}: {previous.get(k)!r} -> {current.get(k)!r}" for k in changed)
            raise StageError(
                f"stage {name}: existing outputs in {meta_path.parent} were made with other settings "
                f"({diffs}); pass force=true to redo this stage (and the ones after it)"
            )
        return
    write_manifest(meta_path, {"stage": name, "params": current})


def _drop_error_rejects(path: Path) -> None:
    if not path.is_file():
        return
    keep = [r for r in read_records(path) if not str(r.get("reason", "")).startswith(ERROR_PREFIX)]
    write_jsonl(path, keep)


def write_manifest(path: Path, obj: Any) -> None:
    """A stage's ``.done.json`` / ``.meta.json`` (or the run's ``stats.json``), atomically."""
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
