import asyncio
import json
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from efficientrag.jsonl import read_jsonl
from efficientrag.synth.records import Reject
from efficientrag.synth.stage import StageError, StageOptions, run_stage, then


def items(n):
    return [{"id": f"q{i}", "x": i} for i in range(n)]


def read(path):
    return list(read_jsonl(path)) if path.is_file() else []


def accounted(tmp_path, name, n):
    out = [r["id"] for r in read(tmp_path / f"{name}.jsonl")]
    rej = [r["id"] for r in read(tmp_path / f"{name}.rejects.jsonl")]
    assert len(out) == len(set(out)), "an output was written twice"
    assert len(rej) == len(set(rej)), "a reject was written twice"
    assert not set(out) & set(rej)
    assert set(out) | set(rej) == {f"q{i}" for i in range(n)}
    return out, rej


def square(item):
    if item["x"] % 5 == 3:
        raise Reject("bad number", f"x={item['x']}")
    if item["x"] == 4:
        raise ValueError("boom")
    return {"id": item["id"], "y": item["x"] ** 2}


def test_outputs_rejects_and_manifest(tmp_path):
    res = run_stage("sq", items(10), square, tmp_path, progress=False)
    out, rej = accounted(tmp_path, "sq", 10)
    assert res.written == 7 and res.rejected == 3 and res.errors == 1 and res.complete
    assert res.reasons == {"bad number": 2, "error: ValueError": 1}
    rejects = {r["id"]: r for r in read(tmp_path / "sq.rejects.jsonl")}
    assert rejects["q3"] == {"id": "q3", "stage": "sq", "reason": "bad number", "detail": "x=3"}
    assert rejects["q4"]["reason"] == "error: ValueError" and "boom" in rejects["q4"]["detail"]
    manifest = json.loads((tmp_path / "sq.done.json").read_text())
    assert manifest["inputs"] == 10 and manifest["written"] == 7 and manifest["rejected"] == 3
    assert {r["id"]: r["y"] for r in read(tmp_path / "sq.jsonl")}["q9"] == 81


def test_resume_after_interrupt_skips_finished_records(tmp_path):
    calls = Counter()

    def flaky(item):
        calls[item["id"]] += 1
        if item["x"] == 6 and calls["q6"] == 1:
            raise KeyboardInterrupt  # the run dies mid-stage
        return square(item)

    with pytest.raises(KeyboardInterrupt):
        run_stage("sq", items(10), flaky, tmp_path, progress=False)
    assert not (tmp_path / "sq.done.json").exists()
    first = len(read(tmp_path / "sq.jsonl")) + len(read(tmp_path / "sq.rejects.jsonl"))
    assert first == 6
    res = run_stage("sq", items(10), flaky, tmp_path, progress=False)
    accounted(tmp_path, "sq", 10)
    assert res.new_written + res.new_rejected == 4
    assert all(calls[f"q{i}"] == 1 for i in range(6))  # finished ones were not redone
    assert (tmp_path / "sq.done.json").exists()

    def dies(item):
        raise KeyboardInterrupt

    # More inputs, interrupted: the old manifest no longer describes the outputs.
    with pytest.raises(KeyboardInterrupt):
        run_stage("sq", items(12), dies, tmp_path, progress=False)
    assert not (tmp_path / "sq.done.json").exists()


KILL_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from efficientrag.synth.stage import run_stage

    def fn(item):
        if item["x"] == 7:
            os.kill(os.getpid(), signal.SIGKILL)
        return {"id": item["id"], "y": item["x"]}

    run_stage("k", [{"id": f"q{i}", "x": i} for i in range(12)], fn, sys.argv[1], progress=False)
    """
)


def test_sigkill_mid_stage_then_rerun_accounts_for_every_input(tmp_path):
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, str(tmp_path)], capture_output=True)
    assert proc.returncode == -9
    assert len(read(tmp_path / "k.jsonl")) == 7
    # A torn last line, as a kill during a write leaves it.
    with (tmp_path / "k.jsonl").open("a") as fh:
        fh.write('{"id": "q7", "y"')
    res = run_stage("k", items(12), lambda it: {"y": it["x"]}, tmp_path, progress=False)
    out, rej = accounted(tmp_path, "k", 12)
    assert not rej and len(out) == 12
    assert res.new_written == 5


def test_async_functions_run_concurrently_up_to_the_limit(tmp_path):
    state = {"now": 0, "peak": 0}

    async def slow(item):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        if item["x"] == 2:
            raise Reject("two")
        return {"y": item["x"]}

    res = run_stage("a", items(20), slow, tmp_path, concurrency=4, progress=False)
    accounted(tmp_path, "a", 20)
    assert res.written == 19 and res.reasons == {"two": 1}
    assert state["peak"] == 4


def test_then_composes_sync_and_async_results(tmp_path):
    assert then(3, lambda v: v + 1) == 4

    async def three():
        return 3

    assert asyncio.run(then(three(), lambda v: v + 1)) == 4


def test_dependencies_are_processed_in_rounds_and_failures_propagate(tmp_path):
    inputs = [
        {"id": "c", "deps": ["b"]},
        {"id": "b", "deps": ["a"]},
        {"id": "a", "deps": []},
        {"id": "bad", "deps": []},
        {"id": "after_bad", "deps": ["bad"]},
        {"id": "orphan", "deps": ["gone"]},
        {"id": "x", "deps": ["y"]},
        {"id": "y", "deps": ["x"]},
    ]
    seen = []

    def fn(item, deps):
        seen.append(item["id"])
        if item["id"] == "bad":
            raise Reject("bad")
        return {
            "chain": [d["id"] for d in deps] + [item["id"]],
            "depth": 1 + max([d["depth"] for d in deps], default=0),
        }

    run_stage("d", inputs, fn, tmp_path, depends_on=lambda it: it["deps"], progress=False)
    out = {r["id"]: r for r in read(tmp_path / "d.jsonl")}
    rej = {r["id"]: r["reason"] for r in read(tmp_path / "d.rejects.jsonl")}
    assert out["c"]["depth"] == 3 and out["c"]["chain"] == ["b", "c"]
    assert seen.index("a") < seen.index("b") < seen.index("c")
    assert rej == {
        "bad": "bad",
        "after_bad": "dependency rejected",
        "orphan": "dependency unavailable",
        "x": "dependency cycle",
        "y": "dependency cycle",
    }


def test_dependencies_resolve_against_outputs_of_an_earlier_run(tmp_path):
    run_stage(
        "d",
        [{"id": "a", "deps": []}],
        lambda it, deps: {"v": 1},
        tmp_path,
        depends_on=lambda it: it["deps"],
        progress=False,
    )
    inputs = [{"id": "a", "deps": []}, {"id": "b", "deps": ["a"]}]
    run_stage(
        "d",
        inputs,
        lambda it, deps: {"v": deps[0]["v"] + 1},
        tmp_path,
        depends_on=lambda it: it["deps"],
        progress=False,
    )
    assert {r["id"]: r["v"] for r in read(tmp_path / "d.jsonl")} == {"a": 1, "b": 2}


def test_batched_functions_get_lists_and_may_reject_single_items(tmp_path):
    sizes = []

    def batch(group):
        sizes.append(len(group))
        return [Reject("odd") if it["x"] % 2 else {"y": it["x"]} for it in group]

    res = run_stage("b", items(10), batch, tmp_path, batch_size=4, progress=False)
    accounted(tmp_path, "b", 10)
    assert sizes == [4, 4, 2] and res.written == 5 and res.reasons == {"odd": 5}


def test_an_options_object_carries_the_settings_and_keywords_override_it(tmp_path):
    sizes = []

    def batch(group):
        sizes.append(len(group))
        return [{"y": it["x"]} for it in group]

    shared = StageOptions(batch_size=4, params={"rate": 0.5}, progress=False)
    run_stage("o", items(6), batch, tmp_path, shared)
    assert sizes == [4, 2]
    # A keyword replaces that one field of the options; the others (params) still hold.
    with pytest.raises(StageError, match="rate"):
        run_stage("o", items(6), batch, tmp_path, shared, params={"rate": 0.9})
    run_stage("o2", items(6), batch, tmp_path, shared, batch_size=3)
    assert sizes == [4, 2, 3, 3]
    with pytest.raises(TypeError, match="batch_sise"):
        run_stage("o3", items(2), batch, tmp_path, shared, batch_sise=2)


def test_a_batch_that_raises_rejects_all_its_items_as_errors(tmp_path):
    def batch(group):
        raise RuntimeError("index broken")

    res = run_stage("b", items(3), batch, tmp_path, batch_size=2, progress=False)
    assert res.reasons == {"error: RuntimeError": 3}


def test_changed_params_are_refused_and_force_redoes(tmp_path):
    run_stage("p", items(3), lambda it: {"v": 1}, tmp_path, params={"rate": 0.5}, progress=False)
    with pytest.raises(StageError, match="rate: 0.5 -> 0.9"):
        run_stage("p", items(3), lambda it: {"v": 2}, tmp_path, params={"rate": 0.9}, progress=False)
    run_stage("p", items(3), lambda it: {"v": 2}, tmp_path, params={"rate": 0.9}, force=True, progress=False)
    assert [r["v"] for r in read(tmp_path / "p.jsonl")] == [2, 2, 2]


def test_retry_errors_reruns_only_records_that_failed_unexpectedly(tmp_path):
    down = {"flag": True}

    def call(item):
        if item["x"] == 0:
            raise Reject("bad input")
        if down["flag"]:
            raise ConnectionError("endpoint down")
        return {"v": item["x"]}

    res = run_stage("r", items(4), call, tmp_path, progress=False)
    assert res.reasons == {"bad input": 1, "error: ConnectionError": 3}
    down["flag"] = False
    again = run_stage("r", items(4), call, tmp_path, progress=False)
    assert again.new_written == 0  # without retry_errors nothing is redone
    again = run_stage("r", items(4), call, tmp_path, retry_errors=True, progress=False)
    assert again.new_written == 3
    out, rej = accounted(tmp_path, "r", 4)
    assert rej == ["q0"]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_max_errors_stops_the_stage(tmp_path, concurrency):
    async def broken(item):
        await asyncio.sleep(0)
        raise OSError("disk")

    with pytest.raises(StageError, match="more than 2 unexpected errors"):
        run_stage("m", items(10), broken, tmp_path, max_errors=2, concurrency=concurrency, progress=False)
    # Records already in flight when the limit is hit still finish (and are recorded).
    assert 3 <= len(read(tmp_path / "m.rejects.jsonl")) < 3 + concurrency
    assert not (tmp_path / "m.done.json").exists()


def test_an_output_with_another_id_is_an_error_not_a_silent_write(tmp_path):
    res = run_stage("o", items(2), lambda it: {"id": "other"}, tmp_path, progress=False)
    assert res.written == 0 and res.reasons == {"error: StageError": 2}


def test_duplicate_input_ids_fail_early(tmp_path):
    with pytest.raises(StageError, match="appears twice"):
        run_stage("dup", [{"id": "a"}, {"id": "a"}], lambda it: {}, tmp_path, progress=False)


def test_postfix_callback_is_polled(tmp_path):
    polled = []
    run_stage(
        "pf",
        items(3),
        lambda it: {},
        tmp_path,
        postfix=lambda: polled.append(1) or {"cost": "$0"},
        progress=False,
    )
    assert len(polled) == 3


def test_interrupt_during_concurrent_async_work_resumes_cleanly(tmp_path):
    started = []

    async def work(item):
        started.append(item["id"])
        await asyncio.sleep(0.001)
        if item["x"] == 9 and started.count("q9") == 1:
            raise KeyboardInterrupt
        return {"v": item["x"]}

    with pytest.raises(KeyboardInterrupt):
        run_stage("c", items(40), work, tmp_path, concurrency=4, progress=False)
    # Workers pull records one at a time: the interrupt stops them before most records started.
    assert len(started) < 20
    run_stage("c", items(40), work, tmp_path, concurrency=4, progress=False)
    out, rej = accounted(tmp_path, "c", 40)
    assert not rej


def test_a_stage_output_holding_an_id_twice_is_repaired_on_resume(tmp_path, caplog):
    run_stage("sq", items(6), square, tmp_path, progress=False)
    out = tmp_path / "sq.jsonl"
    first = read(out)
    # What two writers at once left: ids written twice, the second copies different.
    twins = [dict(r, y=-1) for r in first[:3]]
    out.write_text("".join(json.dumps(r) + "\n" for r in [*first, *twins]))
    (tmp_path / "sq.done.json").unlink()
    with caplog.at_level("WARNING", logger="efficientrag.jsonl"):
        res = run_stage("sq", items(8), square, tmp_path, progress=False)
    assert (
        "sq.jsonl held 3 duplicate records (two writers at once?): dropped them, kept the first"
        in caplog.text
    )
    accounted(tmp_path, "sq", 8)
    assert read(out)[: len(first)] == first  # the first of each id kept
    assert res.written == 6 and res.new_written == 2  # q0-q2 and q5 before, q6 and q7 now


def test_a_stage_in_a_folder_another_process_writes_is_refused_naming_it(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom efficientrag.run_lock import folder_lock\n"
         "with folder_lock(sys.argv[1]):\n    print('locked', flush=True)\n    sys.stdin.read()\n",
         str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(
            StageError, match=rf"stage sq: synthesis folder .* is in use by PID {holder.pid} on "
        ):
            run_stage("sq", items(4), square, tmp_path, progress=False)
        assert not (tmp_path / "sq.jsonl").exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert run_stage("sq", items(4), square, tmp_path, progress=False).complete
