"""Faster inference for a loaded Labeler/Filter: int8 dynamic quantization on CPU, bfloat16 anywhere.

On CPU the Labeler is most of EfficientRAG's per-question time, and almost all of that is the
encoder's Linear layers. Dynamic quantization stores their weights as int8 and quantizes each
activation batch on the fly (PyTorch's fbgemm/x86 kernels): no calibration data, no export step,
and the probabilities move by a few thousandths (measured by ``benchmarks/labeler_speed.py``).
It is an inference-only transformation: a quantized model cannot be trained or saved again.

``bf16`` casts the whole network to bfloat16. On a CPU with bfloat16 instructions (AVX512-BF16 or
AMX, which oneDNN uses) MiniLM's forward pass is 2.6-4x faster than float32 at 128-256 tokens
(measured here); where oneDNN has no bfloat16 kernels it is slower, so that case warns. On a GPU it
is the usual half-precision inference. The probabilities move by about a hundredth.

The other CPU path is ONNX Runtime (modes ``onnx`` and ``onnx-int8``,
:mod:`efficientrag.models.onnx_runtime`); the modes are listed here so every entry point checks
them in one place.
"""

from __future__ import annotations

import warnings
from typing import Literal

import torch

QuantizeMode = Literal["none", "int8", "bf16", "onnx", "onnx-int8"]
QUANTIZE_MODES: tuple[str, ...] = ("none", "int8", "bf16", "onnx", "onnx-int8")
# What this module does itself; the others convert the whole network (WordClassifier.quantize).
TORCH_MODES: tuple[str, ...] = ("none", "int8", "bf16")


def check_quantize_mode(mode: str) -> None:
    if mode not in QUANTIZE_MODES:
        raise ValueError(f"quantize must be one of {', '.join(QUANTIZE_MODES)}, got {mode!r}")


def quantize_network(network: torch.nn.Module, mode: str) -> torch.nn.Module:
    """Replace ``network``'s Linear layers in place by int8 dynamic ones (``mode="int8"``), or cast
    it to bfloat16 in place (``mode="bf16"``).

    Only CPU kernels exist for int8 layers, so a network on another device is refused rather
    than silently moved.
    """
    check_quantize_mode(mode)
    if mode not in TORCH_MODES:
        raise ValueError(
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
        raise ValueError(f"int8 quantization runs on CPU only; the model is on {sorted(devices)}")
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
