"""Numeric precision for decoding: fp32, bf16 (autocast) or int8 (dynamically quantised linear layers).

fp32 on a CPU packs the weights of the linear layers once for oneDNN's matrix kernels
(:class:`PackedLinear`), the same arithmetic at a lower cost per decoding step.

bf16 runs matrix products in bfloat16 through ``torch.autocast`` (fast on GPUs and on CPUs with
AVX512-BF16 or AMX); int8 replaces every ``nn.Linear`` with more than one output with PyTorch's dynamically quantised
version (int8 weights, activations quantised per batch; CPU only), as Marian and CTranslate2 do
for CPU decoding. Both change the scores slightly, so hypotheses can differ from fp32's.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Callable, ContextManager, Optional

import torch
import torch.nn.functional as F
from torch import nn

from nmtkit.errors import NmtkitError

PRECISIONS = ("fp32", "bf16", "int8")


class PackedLinear(nn.Module):
    """An ``nn.Linear`` for fp32 inference on CPUs, its weight laid out once for oneDNN's matrix kernels (the
    private ops that ``torch.compile`` uses for frozen linear layers). On the 2-512 rows of a decoding step they
    beat PyTorch's plain ``linear``, which multiplies by the unpacked weight; a single row, or the many rows of an
    encoder, go the plain way, where the packed kernel is slower (``bench/README.md``, issue 14). ``weight`` and
    ``bias`` stay, shared with the model, for code that reads them; training (gradients on) goes the plain way."""

    ROWS = range(2, 513)

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor]):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.weight, self.bias = weight, bias
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach())  # not a parameter: not saved

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() // self.in_features in self.ROWS and not torch.is_grad_enabled():
            return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
        return F.linear(x, self.weight, self.bias)


def packable() -> bool:
    """Whether this PyTorch has oneDNN's packed linear kernels."""
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def matrix_layers(model: nn.Module) -> dict[str, nn.Linear]:
    """The model's ``nn.Linear`` layers by name, those with more than one output: vector products (out_features 1,
    e.g. attention's v) gain nothing from packing or int8 and stay plain."""
    return {name: m for name, m in model.named_modules() if type(m) is nn.Linear and m.out_features > 1}


def pack_linears(model: nn.Module) -> nn.Module:
    """``model`` with every :func:`matrix_layers` layer replaced, in place, by a :class:`PackedLinear`."""
    for name, layer in matrix_layers(model).items():
        parent, _, attribute = name.rpartition(".")
        setattr(model.get_submodule(parent), attribute, PackedLinear(layer.weight, layer.bias))
    return model


def for_inference(model: nn.Module, precision: str, device: torch.device,
                  pack: bool = True) -> tuple[nn.Module, Callable[[], ContextManager]]:
    """The model to decode with (``model`` itself, changed in place for fp32 on CPUs unless not to ``pack`` (a model
    to compile: Inductor lays out its own), or a quantised copy) and what makes the context to run decoding in (once
    per run: autocast for bf16)."""
    if precision == "fp32":
        return pack_linears(model) if pack and device.type == "cpu" and packable() else model, contextlib.nullcontext
    if precision == "bf16":
        return model, lambda: torch.autocast(device.type, dtype=torch.bfloat16)
    if precision == "int8":
        if device.type != "cpu":
            raise NmtkitError("--precision int8 runs on the CPU only (use bf16 on GPUs)", exit_code=2)
        quantize = getattr(getattr(torch.ao, "quantization", None), "quantize_dynamic", None)
        if quantize is None:
            raise NmtkitError(f"--precision int8: this PyTorch ({torch.__version__}) has no dynamic quantisation",
                              exit_code=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # upstream deprecation notices, not the user's concern
            return quantize(model, set(matrix_layers(model)), dtype=torch.qint8), contextlib.nullcontext
    raise NmtkitError(f"--precision: {precision!r} is not one of {', '.join(PRECISIONS)}", exit_code=2)
