"""``train --compile``: the training forward pass through ``torch.compile``, for batches of every shape with one
compilation."""
from __future__ import annotations

from typing import Callable, Union

import torch
import torch._inductor.config as inductor_config
import torch.fx.experimental._config as shape_config
from torch import nn


def compiled(module: nn.Module, backend: Union[str, Callable] = "inductor") -> nn.Module:
    """``module`` compiled for sizes that vary from batch to batch (``dynamic``): sizes stay symbols, two sizes that
    happen to be equal (a batch's source and target widths) are not merged into one ("duck sizing", which would make
    the equality a guard), and Inductor makes no choice by a size's value. Each would make a batch that breaks it a
    recompilation of the whole model (minutes on a GPU). The settings are the process's (read when a frame is
    compiled). The module itself (its state, checkpoints) stays as it is."""
    shape_config.use_duck_shape = False
    # Inductor's choices by a batch's size, each a guard (both seen on an H200, issue 33: three recompilations by
    # update 75 of 8,192-token batches): padding matrix products above 8,000 rows (batches are padded to a multiple
    # of 8 already: --pad-multiple), and fusing reductions of different loop orders above 5 Mi elements (a layer
    # norm's backward; recent PyTorch only)
    inductor_config.shape_padding = False
    if hasattr(inductor_config.triton, "mix_order_reduction"):
        inductor_config.triton.mix_order_reduction = False
    return torch.compile(module, dynamic=True, backend=backend)
