"""Numeric precision for decoding: fp32, bf16 (autocast) or int8 (dynamically quantised linear layers).

bf16 runs matrix products in bfloat16 through ``torch.autocast`` (fast on GPUs and on CPUs with
AVX512-BF16 or AMX); int8 replaces every ``nn.Linear`` with more than one output with PyTorch's dynamically quantised
version (int8 weights, activations quantised per batch; CPU only), as Marian and CTranslate2 do
for CPU decoding. Both change the scores slightly, so hypotheses can differ from fp32's.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import ContextManager

import torch
from torch import nn

from nmtkit.errors import NmtkitError

PRECISIONS = ("fp32", "bf16", "int8")


def for_inference(model: nn.Module, precision: str, device: torch.device) -> tuple[nn.Module, ContextManager]:
    """The model to decode with and the context to run decoding in."""
    if precision == "fp32":
        return model, contextlib.nullcontext()
    if precision == "bf16":
        return model, torch.autocast(device.type, dtype=torch.bfloat16)
    if precision == "int8":
        if device.type != "cpu":
            raise NmtkitError("--precision int8 runs on the CPU only (use bf16 on GPUs)", exit_code=2)
        quantize = getattr(getattr(torch.ao, "quantization", None), "quantize_dynamic", None)
        if quantize is None:
            raise NmtkitError(f"--precision int8: this PyTorch ({torch.__version__}) has no dynamic quantisation",
                              exit_code=2)
        # vector products (out_features 1, e.g. attention's v) gain nothing from int8 and stay plain
        names = {name for name, m in model.named_modules() if isinstance(m, nn.Linear) and m.out_features > 1}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # upstream deprecation notices, not the user's concern
            return quantize(model, names, dtype=torch.qint8), contextlib.nullcontext()
    raise NmtkitError(f"--precision: {precision!r} is not one of {', '.join(PRECISIONS)}", exit_code=2)
