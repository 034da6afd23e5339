"""``--compile``: a model's training forward pass (``train``) or its decoding step (``translate``, ``caption``,
``serve``) through ``torch.compile``, for inputs of every shape with one compilation."""
from __future__ import annotations

from typing import Callable, TypeVar, Union, cast

import torch
from torch import nn

from nmtkit.errors import NmtkitError

Compilable = TypeVar("Compilable", bound=Union[nn.Module, Callable])


def compiled(target: Compilable, backend: Union[str, Callable] = "inductor") -> Compilable:
    """``target`` (a module, or a function such as a model's ``decode_step``) compiled for sizes that vary from call
    to call (``dynamic``): sizes stay symbols, two sizes that happen to be equal (a batch's source and target widths)
    are not merged into one ("duck sizing", which would make the equality a guard), and Inductor makes no choice by a
    size's value. Each would make a batch that breaks it a recompilation of the whole model (minutes on a GPU). The
    settings are the process's (read when a frame is compiled). A module itself (its state, checkpoints) stays as it
    is."""
    import torch._inductor.config as inductor_config  # (here: importing Inductor takes seconds)
    import torch.fx.experimental._config as shape_config

    shape_config.use_duck_shape = False
    # Inductor's choices by a batch's size, each a guard (both seen on an H200, issue 33: three recompilations by
    # update 75 of 8,192-token batches): padding matrix products above 8,000 rows (batches are padded to a multiple
    # of 8 already: --pad-multiple), and fusing reductions of different loop orders above 5 Mi elements (a layer
    # norm's backward; recent PyTorch only)
    inductor_config.shape_padding = False
    if hasattr(inductor_config.triton, "mix_order_reduction"):
        inductor_config.triton.mix_order_reduction = False
    return cast(Compilable, torch.compile(target, dynamic=True, backend=backend))


def check_compiler(device: torch.device) -> None:
    """A one-line error (exit code 2) where ``--compile`` cannot work on ``device``: on a CPU, Inductor builds its
    kernels with a C++ compiler (``g++``, or ``CXX``), which must be installed."""
    if device.type != "cpu":
        return
    import torch._inductor.config as inductor_config
    from torch._inductor.cpp_builder import get_cpp_compiler

    try:
        get_cpp_compiler()
    except Exception:  # (InvalidCxxCompiler, or whatever this PyTorch raises instead)
        raise NmtkitError(f"--compile: torch.compile builds its CPU kernels with a C++ compiler, and none of "
                          f"{[c for c in inductor_config.cpp.cxx if c]} was found (install g++, or set CXX)",
                          exit_code=2) from None
