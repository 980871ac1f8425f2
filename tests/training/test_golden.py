"""The training loop's results against a recording, on any machine.

Two runs on a tiny DeBERTa: a Labeler with gradient accumulation, step-wise evaluation and
checkpoints, stopped inside an epoch and resumed; and a Filter with epoch-end evaluation and
automatic class weights, stopped exactly at an epoch boundary (its resume replays no batch and
goes straight to the epoch's end).

Which digits of a float survive a move to another machine depends on that machine's CPU kernels
(AVX-512, AVX2 or plain; which ones oneDNN picks for a shape), on the thread count and on the library
versions. So every machine checks what must hold anywhere, and a machine that computes like a
recorded one also checks every bit:

* **Everywhere** (``golden_training.json``'s ``reference``): which rows each optimizer step took
  (the train log's batch hashes), the step, epoch and sample counters, the learning rates, the
  checkpoint state, the files a run writes and which evaluation was best, exactly; the loss of every
  step, every evaluation's metrics and the weights (per tensor: its norm and two fixed random
  projections) within tolerances measured across kernels and thread counts (``TOLERANCES``). A
  resumed run also equals an uninterrupted one bit for bit, on this machine.
* **Where the machine computes like a recorded one** (``platforms``): the digests of the logs,
  weights, optimizer and scheduler state and checkpoints, bit for bit. "Computes like" is decided by
  :func:`training_fingerprint`: real optimizer steps of both model kinds on fixed batches of several
  shapes (dropout, losses with class weights, backward, clipping, AdamW) and an evaluation-mode pass,
  digested with the library versions. One forward pass does not decide it: machines that agree on a
  forward pass were seen to disagree on training.

``python -m tests.training.test_golden record`` adds this machine's digests to ``platforms`` (run
it under each kernel setting and thread count to record); ``... reference`` rewrites the reference
the tolerances apply to. Re-record both when the loop's results change on purpose.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from efficientrag.testing.tiny_backbones import tiny_deberta
from efficientrag.testing.token_tasks import filter_rows, labeler_rows, sentences, write_rows
from efficientrag.training import TrainConfig, train

pytestmark = pytest.mark.numerics

RECORDING = Path(__file__).with_name("golden_training.json")
LIBRARIES = ("torch", "transformers", "accelerate", "datasets")

# Fields of the final metrics that measure this machine, not the run.
MACHINE_FIELDS = ("train_runtime_s", "train_samples_per_second", "peak_rss_mb", "peak_gpu_memory_mb")

RUNS = {
    "labeler": dict(
        model="labeler",
        rows=labeler_rows,
        max_steps=10,
        grad_accumulation=2,
        batch_size=8,
        save_steps=3,
        eval_steps=5,
        stop_after_steps=4,
    ),
    # 96 rows / 16 = 6 batches per epoch: the stop at step 6 lands on the first epoch's end.
    "filter": dict(
        model="filter",
        rows=filter_rows,
        epochs=2,
        batch_size=16,
        eval_steps=0,
        save_steps=0,
        class_weights="auto",
        stop_after_steps=6,
    ),
}


@dataclass(frozen=True)
class Tolerances:
    """How far a run may drift from the reference on another machine (absolute, per value).

    ``loss``: each step's loss; ``metric``: each evaluation metric (precision, recall, F1,
    accuracy, loss); ``weight``: each tensor's norm and projections, relative to the tensor's norm.
    """

    loss: float
    metric: float
    weight: float


TOLERANCES = Tolerances(loss=1e-5, metric=1e-4, weight=1e-5)


# -- digests -------------------------------------------------------------------------------------


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _tensors_digest(tensors: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for key in sorted(tensors):
        h.update(key.encode())
        h.update(tensors[key].detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _optimizer_digest(path: Path) -> str:
    state = torch.load(path, weights_only=True)
    flat = {
        f"{pid}.{name}": value
        for pid, entry in state["state"].items()
        for name, value in entry.items()
        if isinstance(value, torch.Tensor)
    }
    return _tensors_digest(flat) + "/" + _digest(state["param_groups"])


def library_versions() -> dict[str, str]:
    """The versions of the libraries whose kernels and data order the loop's last bits depend on."""
    from importlib.metadata import version

    return {name: version(name) for name in LIBRARIES}


def training_fingerprint(backbone: Path) -> str:
    """How this machine trains, computed without the training loop: a digest of real optimizer steps.

    Both model kinds take AdamW steps on fixed batches of several sizes and lengths, in training
    mode (dropout), with class-weighted losses, backward and gradient clipping; the losses, the
    gradients and the weights after every step are digested, then one evaluation-mode pass over a
    larger batch, and the library versions. Two machines that agree on this compute the golden runs'
    floats alike; the loop's own code is not used, so a bug in the loop fails the exact comparison
    instead of hiding behind a changed fingerprint.
    """
    from efficientrag.models.modeling import MODEL_INPUTS, compute_loss
    from efficientrag.models.wrappers import WRAPPER_CLASSES
    from efficientrag.training.setup import parameter_groups

    h = hashlib.sha256(json.dumps(library_versions(), sort_keys=True).encode())
    for kind, rows, sizes in (
        ("labeler", labeler_rows(61, seed=11), (8, 16, 5)),
        ("filter", filter_rows(61, seed=11), (16, 3, 8)),
    ):
        torch.manual_seed(5)
        model = WRAPPER_CLASSES[kind].from_backbone(str(backbone), max_length=64, device="cpu")
        network, collate = model.network, model.collator()
        encoded = list(enumerate(model.encode_rows(rows, max_length=64)))
        encoded.sort(key=lambda item: len(item[1]))  # batches of different lengths
        optimizer = torch.optim.AdamW(parameter_groups(network, 0.01), lr=3e-3)
        weights = torch.tensor([1.0, 2.5])
        start = 0
        for size in sizes:
            network.train()
            batch = collate(encoded[start : start + size] + encoded[-size:])
            start += size
            parts = compute_loss(network(**{k: batch[k] for k in MODEL_INPUTS if k in batch}), batch,
                                 class_weights=weights)  # fmt: skip
            parts.total.backward()
            torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
            grads = {n: p.grad for n, p in network.named_parameters() if p.grad is not None}
            h.update(_tensors_digest({"loss": parts.total.detach(), **grads}).encode())
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            h.update(_tensors_digest(dict(network.state_dict())).encode())
        network.eval()
        with torch.no_grad():
            batch = collate(encoded[:32])
            outputs = network(**{k: batch[k] for k in MODEL_INPUTS if k in batch})
        h.update(_tensors_digest({k: v for k, v in outputs.items() if isinstance(v, torch.Tensor)}).encode())
    return h.hexdigest()[:32]


# -- one golden run --------------------------------------------------------------------------------


@dataclass
class Observed:
    """What a stopped-and-resumed run produced: bit digests, and the values the tolerances apply to."""

    digests: dict[str, str]
    trace: dict
    state: dict


def run_golden(root: Path, name: str, backbone: Path, *, stop: bool = True, **changes) -> Observed:
    """Train run ``name`` in ``root``: stop, digest, resume, digest (``stop=False``: in one go).

    ``changes`` override the run's settings (the tests' deliberate mistakes).
    """
    spec = dict(RUNS[name])
    rows = spec.pop("rows")
    stop_after = spec.pop("stop_after_steps")
    data = write_rows(root / "data", rows(96, seed=1), rows(32, seed=2, prefix="v"))
    out = root / "run"
    base = dict(
        backbone=str(backbone),
        data_dir=str(data),
        output_dir=str(out),
        learning_rate=3e-3,
        max_length=64,
        cache_dir=str(root / "tokenized"),  # its own cache: a hit never depends on the tests run before
        warmup_steps=2,
        logging_steps=1,
        mixed_precision="no",
        **spec,
    )
    base.update(changes)
    digests = {}
    if stop:
        partial = train(TrainConfig(**base, stop_after_steps=stop_after))
        digests["stopped"] = _run_digest(out, _reproducible(partial, root, backbone))
        final = train(TrainConfig(**base), resume=True)
    else:
        final = train(TrainConfig(**base))
    digests["resumed"] = _run_digest(out, _reproducible(final, root, backbone))
    digests["best"] = _tensors_digest(load_file(out / "best" / "model.safetensors"))
    digests["best_metrics"] = _digest(json.loads((out / "best" / "metrics.json").read_text()))
    return Observed(digests, trace_of(out), run_state(out))


def _reproducible(metrics: dict, root: Path, backbone: Path) -> dict:
    """The returned metrics less what measures the machine; temporary paths made constant."""
    kept = {k: v for k, v in metrics.items() if k not in MACHINE_FIELDS}
    if "tokenized_cache" in kept:
        kept["tokenized_cache"] = {split: v["hit"] for split, v in kept["tokenized_cache"].items()}
    return json.loads(json.dumps(kept).replace(str(backbone), "BACKBONE").replace(str(root), "ROOT"))


def _run_digest(out: Path, returned: dict) -> str:
    return _digest({"returned": returned, **run_state(out)})


def run_state(out: Path) -> dict:
    """Everything a run leaves in its folder, less the metrics it returned to this session: the
    files, logs, checkpoint state, and digests of the weights, optimizer and scheduler."""
    last = out / "checkpoints" / "last"
    state = {
        "files": sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()),
        "train_log": _jsonl(out / "train_log.jsonl"),
        "eval_log": _jsonl(out / "eval_log.jsonl"),
        "trainer_state": json.loads((last / "trainer_state.json").read_text()),
        "run_info": json.loads((last / "run_info.json").read_text()),
        "weights": _tensors_digest(load_file(last / "model.safetensors")),
        "optimizer": _optimizer_digest(last / "optimizer.bin"),
        "scheduler": _digest(torch.load(last / "scheduler.bin", weights_only=True)),
    }
    if (out / "best" / "metrics.json").is_file():  # none before the first evaluation
        state["best"] = _tensors_digest(load_file(out / "best" / "model.safetensors"))
        state["best_metrics"] = json.loads((out / "best" / "metrics.json").read_text())
    return state


FLOAT_STEP_FIELDS = ("loss", "token_loss", "tag_loss")


def trace_of(out: Path) -> dict:
    """A finished run's values for the machine-independent checks: exact fields and float fields."""
    last = out / "checkpoints" / "last"
    steps = _jsonl(out / "train_log.jsonl")
    evals = _jsonl(out / "eval_log.jsonl")
    state = json.loads((last / "trainer_state.json").read_text())
    best = json.loads((out / "best" / "metrics.json").read_text())
    return {
        "exact": {
            "steps": [{k: v for k, v in s.items() if k not in FLOAT_STEP_FIELDS} for s in steps],
            "evals": [{"step": e["step"], "epoch": e["epoch"]} for e in evals],
            "state": {k: v for k, v in state.items() if k not in ("best_score", "best_metrics")},
            "run_info": json.loads((last / "run_info.json").read_text()),
            "best_step": best["step"],
            "files": sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()),
        },
        "losses": [[s[k] for k in FLOAT_STEP_FIELDS] for s in steps],
        "metrics": [{k: v for k, v in e.items() if k not in ("step", "epoch")} for e in evals],
        "weights": weight_profile(load_file(last / "model.safetensors")),
        "best_weights": weight_profile(load_file(out / "best" / "model.safetensors")),
    }


def weight_profile(tensors: dict[str, torch.Tensor]) -> dict[str, list[float]]:
    """Per tensor: its norm and its projections on two fixed random vectors (seeded by its name), so
    a change to any element of any tensor moves a number that is compared."""
    profile = {}
    for name in sorted(tensors):
        flat = tensors[name].detach().double().flatten()
        g = torch.Generator().manual_seed(int(hashlib.sha256(name.encode()).hexdigest()[:8], 16))
        probes = torch.randn(2, flat.numel(), generator=g, dtype=torch.float64) / math.sqrt(flat.numel())
        profile[name] = [float(flat.norm()), *(float(v) for v in probes @ flat)]
    return profile


def differences(trace: dict, reference: dict, tol: Tolerances = TOLERANCES) -> list[str]:
    """Where ``trace`` departs from ``reference`` beyond float noise, one line each (empty: none)."""
    problems = [
        f"{key}: {trace['exact'][key]!r} != {reference['exact'][key]!r}"
        for key in reference["exact"]
        if trace["exact"].get(key) != reference["exact"][key]
    ]
    if problems:  # another schedule or batch order: the floats are not comparable step by step
        return problems
    for i, (got, want) in enumerate(zip(trace["losses"], reference["losses"], strict=True)):
        for field, a, b in zip(FLOAT_STEP_FIELDS, got, want, strict=True):
            if abs(a - b) > tol.loss:
                problems.append(f"step {i + 1} {field}: {a!r} vs {b!r} (tolerance {tol.loss})")
    for i, (got, want) in enumerate(zip(trace["metrics"], reference["metrics"], strict=True)):
        if set(got) != set(want):
            problems.append(f"evaluation {i + 1} metrics: {sorted(got)} != {sorted(want)}")
            continue
        problems += [
            f"evaluation {i + 1} {k}: {got[k]!r} vs {want[k]!r} (tolerance {tol.metric})"
            for k in want
            if abs(got[k] - want[k]) > tol.metric
        ]
    for which in ("weights", "best_weights"):
        got, want = trace[which], reference[which]
        if set(got) != set(want):
            problems.append(f"{which}: tensors {sorted(set(got) ^ set(want))} differ")
            continue
        for name, values in want.items():
            bound = tol.weight * max(values[0], 1.0)
            if any(abs(a - b) > bound for a, b in zip(got[name], values, strict=True)):
                problems.append(f"{which} {name}: {got[name]} vs {values} (tolerance {bound:.3g})")
    return problems


# -- the tests -------------------------------------------------------------------------------------


def load_recording() -> dict:
    return json.loads(RECORDING.read_text(encoding="utf-8"))


def golden_threads() -> int:
    """``OMP_NUM_THREADS`` when set (CI's one-thread run), else every core this process may use.

    Pinned for the module because other tests change torch's thread count, and the count changes
    how a matrix product splits its sums.
    """
    from efficientrag.cpu import available_cores

    return int(os.environ.get("OMP_NUM_THREADS") or available_cores())


@pytest.fixture(scope="module")
def backbone(tmp_path_factory) -> Iterator[Path]:
    before = torch.get_num_threads()
    torch.set_num_threads(golden_threads())
    try:
        yield tiny_deberta(tmp_path_factory.mktemp("deberta"), sentences(300))
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def observed(backbone, tmp_path_factory) -> dict[str, Observed]:
    """Each golden run, stopped and resumed, once for the module's tests."""
    return {name: run_golden(tmp_path_factory.mktemp(name), name, backbone) for name in RUNS}


@pytest.fixture(scope="module")
def platform(backbone) -> dict | None:
    """The recorded digests of a machine that computes like this one, or None."""
    return load_recording()["platforms"].get(training_fingerprint(backbone))


@pytest.mark.parametrize("name", list(RUNS))
def test_training_matches_the_recording(name, observed, platform, record_property):
    """Everywhere: batches, counters and files exactly, floats within tolerance; on a recorded
    platform also every bit."""
    run = observed[name]
    assert differences(run.trace, load_recording()["reference"][name]) == []
    record_property("bit_exact", platform is not None)
    if platform is not None:
        assert run.digests == platform[name]


@pytest.mark.parametrize("name", list(RUNS))
def test_a_resumed_run_equals_an_uninterrupted_one_bit_for_bit(name, observed, backbone, tmp_path):
    whole = run_golden(tmp_path, name, backbone, stop=False)
    assert whole.state == observed[name].state


# Deliberate mistakes that leave every batch and learning rate as it was. Measured against the
# reference: the losses move 2 to 7,600 times their tolerance and the weights 14 to 9,800 times;
# two of them also change which evaluation was best.
MISTAKES = {
    "no gradient clipping": ("labeler", dict(max_grad_norm=0.0)),
    "Adam's epsilon 1e-7": ("filter", dict(adam_epsilon=1e-7)),
    "no class weights": ("filter", dict(class_weights=None)),
    "weight decay 0.02": ("labeler", dict(weight_decay=0.02)),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_the_tolerances_catch_a_real_change(mistake, backbone, tmp_path):
    name, changes = MISTAKES[mistake]
    run = run_golden(tmp_path, name, backbone, stop=False, **changes)
    problems = differences(run.trace, load_recording()["reference"][name])
    assert problems


# -- recording ------------------------------------------------------------------------------------


def _record(what: str) -> None:
    """``record``: this machine's digests into ``platforms``; ``reference``: the tolerance reference."""
    import tempfile

    recording = load_recording() if RECORDING.is_file() else {"platforms": {}, "reference": {}}
    torch.set_num_threads(golden_threads())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        backbone = tiny_deberta(root / "deberta", sentences(300))
        runs = {name: run_golden(root / name, name, backbone) for name in RUNS}
        gate = training_fingerprint(backbone)
    if what == "reference":
        recording["reference"] = {name: run.trace for name, run in runs.items()}
    else:
        recording["platforms"][gate] = {
            "machine": f"{os.environ.get('ATEN_CPU_CAPABILITY', 'native')} kernels "
            f"({torch.backends.cpu.get_cpu_capability()}), {torch.get_num_threads()} thread(s), "
            + ", ".join(f"{k} {v}" for k, v in library_versions().items()),
            **{name: run.digests for name, run in runs.items()},
        }
    RECORDING.write_text(json.dumps(recording, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{what}: {gate} written to {RECORDING}")


if __name__ == "__main__":
    _record(sys.argv[1] if len(sys.argv) > 1 else "record")
