"""Faster inference for a loaded Labeler/Filter: int8 and bfloat16 torch networks, and ONNX Runtime.

Every mode (``QUANTIZE_MODES``) is an inference-only transformation, checked here for every entry
point; ``WordClassifier.quantize`` applies them.

**int8** (torch). On CPU the Labeler is most of EfficientRAG's per-question time, and almost all of
that is the encoder's Linear layers. Dynamic quantization stores their weights as int8 and quantizes
each activation batch on the fly (PyTorch's fbgemm/x86 kernels): no calibration data, no export
step, and the probabilities move by a few thousandths (measured by ``benchmarks/labeler_speed.py``).
A quantized model cannot be trained or saved again.

**bf16** casts the whole network to bfloat16. On a CPU with bfloat16 instructions (AVX512-BF16 or
AMX, which oneDNN uses) MiniLM's forward pass is 2.6-4x faster than float32 at 128-256 tokens
(measured here); where oneDNN has no bfloat16 kernels it is slower, so that case warns. On a GPU it
is the usual half-precision inference. The probabilities move by about a hundredth.

**onnx / onnx-int8**. Torch's int8 keeps the encoder in eager mode; ONNX Runtime runs the same
network as one optimized graph (fused LayerNorm/GELU/attention, no Python between ops). How much
that buys depends on the input: ``benchmarks/labeler_backends.py`` measures isolated batches of long
pairs, ``benchmarks/labeler_speed.py`` the whole retrieval loop, where most of the time is the Linear
layers' matrix products. In the loop on 2 CPU cores fp32 gained nothing over torch and int8 weights
1.3-1.4x, at up to 1.3 recall points on validation questions (README, "CPU cost"); shorter Labeler
inputs (``labeler_max_length``) gained more. The network is exported once per (weights, config,
torch version) into a cache folder (``$EFFICIENTRAG_ONNX_CACHE``, else
``$XDG_CACHE_HOME/efficientrag/onnx``, else ``~/.cache/efficientrag/onnx``), never into the model's
own folder. The session is a snapshot of the weights at export time: a model trained further must
be converted again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Literal

import torch

from efficientrag.cpu import available_cores
from efficientrag.errors import InvalidArgumentError, MissingExtraError
from efficientrag.models.inputs import SEG_QUERY, SEG_TARGET
from efficientrag.models.modeling import TokenClassifierNetwork

QuantizeMode = Literal["none", "int8", "bf16", "onnx", "onnx-int8", "auto"]
QUANTIZE_MODES: tuple[str, ...] = ("none", "int8", "bf16", "onnx", "onnx-int8", "auto")
# What this module does itself; the others convert the whole network (WordClassifier.quantize).
TORCH_MODES: tuple[str, ...] = ("none", "int8", "bf16")


def check_quantize_mode(mode: str) -> None:
    if mode not in QUANTIZE_MODES:
        raise InvalidArgumentError(f"quantize must be one of {', '.join(QUANTIZE_MODES)}, got {mode!r}")


def resolve_quantize(mode: str, device: str | torch.device | None = None) -> str:
    """The mode ``auto`` stands for on ``device`` (None: a GPU when there is one, else the CPU);
    every other mode is itself.

    ``auto`` is ``bf16`` where bfloat16 is fast, on a GPU that supports it or on a CPU whose oneDNN
    has bfloat16 kernels (AVX512-BF16 or AMX: 2.6-4x faster than float32 for MiniLM,
    docs/performance.md), and ``none`` (float32) elsewhere, where bf16 would be slower. The
    resolved mode is what a run's fingerprint records (the predictions differ by about a hundredth).

    Args:
        mode: one of ``QUANTIZE_MODES``.
        device: where the model runs.
    """
    check_quantize_mode(mode)
    if mode != "auto":
        return mode
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if torch.device(device).type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "none"
    if torch.device(device).type == "cpu":
        return "bf16" if cpu_has_bf16_kernels() else "none"
    return "none"


def quantize_network(network: torch.nn.Module, mode: str) -> torch.nn.Module:
    """Replace ``network``'s Linear layers in place by int8 dynamic ones (``mode="int8"``), or cast
    it to bfloat16 in place (``mode="bf16"``).

    Only CPU kernels exist for int8 layers, so a network on another device is refused rather
    than silently moved.
    """
    check_quantize_mode(mode)
    mode = resolve_quantize(mode, next(iter(network.parameters())).device if mode == "auto" else None)
    if mode not in TORCH_MODES:
        raise InvalidArgumentError(
            f"quantize={mode!r} runs the network through ONNX Runtime: use WordClassifier.quantize({mode!r})"
        )
    if mode == "none":
        return network
    devices = {p.device.type for p in network.parameters()}
    if mode == "bf16":
        if "cpu" in devices and not cpu_has_bf16_kernels():
            warnings.warn(
                "this CPU has no bfloat16 kernels in oneDNN (AVX512/AMX): quantize='bf16' will be slower "
                "than float32 here",
                RuntimeWarning,
                stacklevel=2,
            )
        return network.eval().to(torch.bfloat16)
    if devices - {"cpu"}:
        raise InvalidArgumentError(f"int8 quantization runs on CPU only; the model is on {sorted(devices)}")
    network.eval()
    with warnings.catch_warnings():
        # torch.ao's eager quantization is deprecated in favour of torchao, which is not a
        # dependency here; the kernels are unchanged in the torch versions this package supports.
        warnings.simplefilter("ignore", category=DeprecationWarning)
        warnings.simplefilter("ignore", category=UserWarning)
        torch.ao.quantization.quantize_dynamic(network, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
    return network


def is_quantized(network: torch.nn.Module) -> bool:
    """int8-quantized (CPU only)."""
    dynamic_linear = torch.ao.nn.quantized.dynamic.Linear
    return any(isinstance(m, dynamic_linear) for m in network.modules())


def is_bf16(network: torch.nn.Module) -> bool:
    return any(p.dtype == torch.bfloat16 for p in network.parameters())


def cpu_has_bf16_kernels() -> bool:
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


# -- ONNX Runtime ------------------------------------------------------------------------------------

ONNX_MODES: tuple[str, ...] = ("onnx", "onnx-int8")
# Part of the cache key: bump it when the exported graph changes, so old caches are not reused.
EXPORT_FORMAT = 1
OPSET = 17
MODEL_FILE = "model.onnx"
INSTALL_HINT = "pip install 'efficientrag[onnx]'"
# Above this size a graph's weights go to external data files (protobuf's 2 GiB limit).
_EXTERNAL_DATA_BYTES = 1_800_000_000


def require_onnx() -> Any:
    """``onnxruntime``, or an error that says which extra to install."""
    try:
        import onnx  # noqa: F401  (the exporter and the quantizer need it)
        import onnxruntime
    except ImportError as err:
        raise MissingExtraError(
            f"the ONNX Runtime backend needs onnxruntime and onnx ({err.name} is missing): {INSTALL_HINT}"
        ) from err
    return onnxruntime


def cache_root() -> Path:
    env = os.environ.get("EFFICIENTRAG_ONNX_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "efficientrag" / "onnx"


def network_key(network: TokenClassifierNetwork) -> str:
    """Hash of what decides the exported graph: config, weights, torch version and export format.

    The weights are hashed in memory rather than through the source folder's files, so a model
    built or changed in memory never picks up another model's graph.
    """
    h = hashlib.sha256()
    h.update(f"{EXPORT_FORMAT}|{OPSET}|{torch.__version__}|".encode())
    h.update(network.config.to_json_string(use_diff=False).encode())
    for name, tensor in sorted(network.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy())
    return h.hexdigest()[:32]


class OnnxNetwork:
    """Stands in for the torch network in ``WordClassifier._run``: same inputs, same output names."""

    def __init__(self, path: Path, mode: str, *, threads: int | None = None) -> None:
        ort = require_onnx()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or available_cores()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.path = path
        self.mode = mode
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.output_names = [o.name for o in self.session.get_outputs()]

    def __call__(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        ids = inputs["input_ids"]
        # The exporter drops inputs the graph does not read (token types of an encoder without
        # them, segments without pair pooling); a tokenizer without token types gets zeros, as the
        # torch encoders default to.
        feeds = {
            name: (inputs[name] if name in inputs else torch.zeros_like(ids)).to("cpu", torch.int64).numpy()
            for name in self.input_names
        }
        outputs = self.session.run(self.output_names, feeds)
        return {name: torch.from_numpy(out) for name, out in zip(self.output_names, outputs, strict=True)}


def onnx_network(
    network: TokenClassifierNetwork,
    mode: str,
    *,
    cache_dir: str | Path | None = None,
    threads: int | None = None,
) -> OnnxNetwork:
    """An ORT session running ``network`` (``mode`` ``"onnx"``: fp32, ``"onnx-int8"``: int8 weights)."""
    if mode not in ONNX_MODES:
        raise InvalidArgumentError(f"ONNX Runtime mode must be one of {', '.join(ONNX_MODES)}, got {mode!r}")
    require_onnx()
    devices = {p.device.type for p in network.parameters()}
    if devices - {"cpu"}:
        raise InvalidArgumentError(
            f"the ONNX Runtime backend runs on CPU only; the model is on {sorted(devices)}"
        )
    dtypes = {p.dtype for p in network.parameters()}
    if dtypes != {torch.float32}:
        raise InvalidArgumentError(
            f"the ONNX Runtime backend exports float32 models; this one is {sorted(map(str, dtypes))}"
        )
    folder = Path(cache_dir).expanduser() if cache_dir is not None else cache_root()
    folder = folder / network_key(network)
    fp32 = _cached(folder / "fp32", lambda tmp: _export(network, tmp / MODEL_FILE))
    path = fp32
    if mode == "onnx-int8":
        path = _cached(folder / "int8", lambda tmp: _quantize(fp32, tmp / MODEL_FILE))
    return OnnxNetwork(path, mode, threads=threads)


def _cached(target: Path, make: Any) -> Path:
    """``target/model.onnx``, made once: written into a private folder, then renamed into place, so
    concurrent processes and crashes never leave a half-written graph behind."""
    path = target / MODEL_FILE
    if path.is_file():
        return path
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        make(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not path.is_file():  # lost a race only if the winner finished
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


class _Forward(torch.nn.Module):
    """The network's forward as a function of tensors only (the exporter cannot return a ModelOutput)."""

    def __init__(self, network: TokenClassifierNetwork) -> None:
        super().__init__()
        self.network = network

    def forward(self, input_ids, attention_mask, token_type_ids, segment_ids):  # type: ignore[override]
        out = self.network(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            segment_ids=segment_ids,
        )
        if self.network.tag_head is None:
            return (out["token_logits"],)
        return out["token_logits"], out["tag_logits"]


def _export(network: TokenClassifierNetwork, path: Path) -> None:
    """Trace the network with the TorchScript exporter (``dynamo=False``).

    Both exporters of torch 2.13 give outputs within 1e-6 of torch for MiniLM/BERT and DeBERTa-v2
    (sdpa and eager attention, padded batches). The TorchScript one is chosen because it needs no
    ``onnxscript`` dependency, exports MiniLM in ~2 s instead of ~13 s, and prints nothing; it is
    deprecated upstream, so a torch that drops it will need ``dynamo=True`` (plus ``onnxscript``).
    The traced Python branches are shape-independent: batch and sequence axes stay dynamic.
    """
    seq = 16
    vocab = int(getattr(network.config.encoder_config, "vocab_size", 1000) or 1000)
    input_ids = (torch.arange(2 * seq, dtype=torch.long).reshape(2, seq) * 7 + 5) % vocab
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, seq - 4 :] = 0  # a padded row, so masking is traced as data, not a constant
    segment_ids = torch.zeros_like(input_ids)
    segment_ids[:, 1:5] = SEG_QUERY
    segment_ids[:, 6:10] = SEG_TARGET
    names = ["input_ids", "attention_mask", "token_type_ids", "segment_ids"]
    outputs = ["token_logits"] if network.tag_head is None else ["token_logits", "tag_logits"]
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    axes["token_logits"] = {0: "batch", 1: "sequence"}
    if len(outputs) == 2:
        axes["tag_logits"] = {0: "batch"}
    was_training = network.training
    wrapper = _Forward(network).eval()
    try:
        with warnings.catch_warnings(), torch.no_grad():
            # The deprecation notice and the tracer's notes on Python booleans (shape checks that
            # hold for every input) are not actionable for a user.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                wrapper,
                (input_ids, attention_mask, torch.zeros_like(input_ids), segment_ids),
                str(path),
                input_names=names,
                output_names=outputs,
                dynamic_axes=axes,
                opset_version=OPSET,
                do_constant_folding=True,
                dynamo=False,
            )
    finally:
        network.train(was_training)


def _quantize(fp32: Path, path: Path) -> None:
    """int8 weights, activations quantized per batch at run time (no calibration data needed).

    Weights get one scale per output channel: on a MiniLM Filter that cuts the largest word
    probability error from 0.051 to 0.018 against fp32, at a speed within measurement noise.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    size = sum(f.stat().st_size for f in fp32.parent.iterdir())
    # The quantizer advises pre-processing (for CNNs) through logging.warning, which would also
    # configure the root logger of an application that has not; neither should happen here.
    root = logging.getLogger()
    guard = logging.NullHandler()
    advice = _DropAdvice()
    root.addHandler(guard)
    root.addFilter(advice)
    try:
        quantize_dynamic(
            fp32,
            path,
            weight_type=QuantType.QInt8,
            per_channel=True,
            use_external_data_format=size > _EXTERNAL_DATA_BYTES,
        )
    finally:
        root.removeFilter(advice)
        root.removeHandler(guard)


class _DropAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()
