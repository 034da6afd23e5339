"""Numeric precision for decoding: fp32, bf16 (autocast) or int8 (dynamically quantised linear layers).

fp32 on a CPU packs the weights of the linear layers once for oneDNN's matrix kernels
(:class:`PackedLinear`, the layers large enough for it to pay, or every one for a compiled decoding step), the same
arithmetic at a lower cost per decoding step.

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
    private ops that ``torch.compile`` uses for frozen linear layers). The packed kernel costs more per call than
    PyTorch's plain ``linear`` and less per multiply-add: it pays from a number of rows that falls as the weight
    grows (:attr:`FROM_ROWS`), up to a decoding step's 512; a single row, the few rows of a small layer, or the many
    rows of an encoder go the plain way (``bench/README.md``, issues 14 and 34). For a compiled decoding step
    (``every``) every matrix layer is packed, and multiplies packed at any rows up to 512 while compiled, measured
    faster there; uncompiled (an encoder, a search's first steps) it keeps the rule by size.
    ``weight`` and ``bias`` stay, shared with the model, for code that reads them; training (gradients on) goes the
    plain way."""

    #: (fewest weights, fewest rows), largest first: a layer of at least that many weights takes the packed kernel
    #: from that many rows on (measured by ``bench/search_kernels.py``); a smaller layer is not packed
    FROM_ROWS = ((1 << 20, 5), (1 << 17, 16))
    MOST_ROWS = 512

    def __init__(self, weight: torch.Tensor, bias: Optional[torch.Tensor], every: bool = False):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.weight, self.bias, self.every = weight, bias, every
        self.from_rows = fewest_packed_rows(weight)  # (uncompiled)
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach())  # not a parameter: not saved

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():
            return F.linear(x, self.weight, self.bias)
        if torch.compiler.is_compiling():  # (see packed_linear)
            return packed_linear(x, self.weight, self.packed, self.bias, 1 if self.every else self.from_rows)
        return product(x, self.weight, self.packed, self.bias, self.from_rows)


def product(x: torch.Tensor, weight: torch.Tensor, packed: torch.Tensor, bias: Optional[torch.Tensor],
            from_rows: int) -> torch.Tensor:
    """``x`` times ``weight`` (``packed``: the same, packed) plus ``bias``: packed from ``from_rows`` rows to
    :attr:`PackedLinear.MOST_ROWS`, plain otherwise."""
    if from_rows <= x.numel() // weight.size(1) <= PackedLinear.MOST_ROWS:
        return packed_product(x, packed, bias)
    return F.linear(x, weight, bias)


#: :func:`product` as one operator of its own for ``torch.compile`` (``torch.ops.nmtkit.packed_linear``): a compiled
#: decoding step calls it with the layer's packed weight as an input, the one copy that the uncompiled step uses
#: too, and it chooses packed or plain by the rows as it runs, not by a guard in each graph. (Compiled with
#: Inductor's ``freezing`` instead, each graph held a packed copy of the weights as its constants: bench/README.md,
#: "One packed copy of the weights".) Defined through ``torch.library.Library``, whose call cost 3-10 µs more than
#: calling the kernel directly where ``torch.library.custom_op``'s cost 15-45 µs more, at a decoding step's ten or
#: more layers.
_LIBRARY = torch.library.Library("nmtkit", "DEF")
_LIBRARY.define("packed_linear(Tensor x, Tensor weight, Tensor packed, Tensor? bias, int from_rows) -> Tensor")
_LIBRARY.impl("packed_linear", product, "CompositeExplicitAutograd")  # (any device: packed is a oneDNN tensor)


def _packed_linear_shape(x: torch.Tensor, weight: torch.Tensor, *_: object) -> torch.Tensor:
    """What :func:`product` gives, its shape only (for the compiler's tracing)."""
    return x.new_empty(*x.shape[:-1], weight.size(0))


_LIBRARY.impl("packed_linear", _packed_linear_shape, "Meta")
packed_linear = torch.ops.nmtkit.packed_linear


def fewest_packed_rows(weight: torch.Tensor) -> int:
    """The rows from which a layer of ``weight`` multiplies faster packed (:attr:`PackedLinear.FROM_ROWS`; past
    :attr:`PackedLinear.MOST_ROWS` where packing never pays)."""
    return next((rows for weights, rows in PackedLinear.FROM_ROWS if weight.numel() >= weights),
                PackedLinear.MOST_ROWS + 1)


def worth_packing(weight: torch.Tensor) -> bool:
    """Whether a layer of ``weight`` multiplies faster packed at some rows of a decoding step."""
    return fewest_packed_rows(weight) <= PackedLinear.MOST_ROWS


def packed_product(x: torch.Tensor, packed: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    """``x`` times a weight packed by oneDNN, plus ``bias``."""
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def packable() -> bool:
    """Whether this PyTorch has oneDNN's packed linear kernels."""
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def matrix_layers(model: nn.Module) -> dict[str, nn.Linear]:
    """The model's ``nn.Linear`` layers by name, those with more than one output: vector products (out_features 1,
    e.g. attention's v) gain nothing from packing or int8 and stay plain."""
    return {name: m for name, m in model.named_modules() if type(m) is nn.Linear and m.out_features > 1}


def pack_linears(model: nn.Module, every: bool = False) -> nn.Module:
    """``model`` with its :func:`matrix_layers` layers replaced, in place, by :class:`PackedLinear` s: those
    :func:`worth_packing`, or ``every`` one (see :class:`PackedLinear`)."""
    for name, layer in matrix_layers(model).items():
        if not (every or worth_packing(layer.weight)):
            continue
        parent, _, attribute = name.rpartition(".")
        setattr(model.get_submodule(parent), attribute, PackedLinear(layer.weight, layer.bias, every))
    return model


def for_inference(model: nn.Module, precision: str, device: torch.device,
                  compiled: bool = False) -> tuple[nn.Module, Callable[[], ContextManager]]:
    """The model to decode with (``model`` itself, changed in place for fp32 on CPUs, or a quantised copy) and what
    makes the context to run decoding in (entered while it computes: autocast for bf16); ``compiled``: for a decoding step to
    be compiled (every layer packed: see :class:`PackedLinear`)."""
    if precision == "fp32":
        ready = pack_linears(model, compiled) if device.type == "cpu" and packable() else model
        return ready, contextlib.nullcontext
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
