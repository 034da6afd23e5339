"""``train --compile``: the training forward pass through ``torch.compile``, for batches of every shape with one
compilation."""
from __future__ import annotations

from typing import Callable, Union

import torch
import torch._inductor.config as inductor_config
import torch.fx.experimental._config as shape_config
from torch import nn

#: Inductor's choices that compare a batch's sizes with a threshold: each comparison is a guard, and a batch on its
#: other side a recompilation (both seen on an H200, issue 33: three by update 75 of 8,192-token batches). Fusing
#: reductions of different loop orders (above 5 Mi elements: a layer norm's backward) and padding matrix products
#: (above 8,000 rows; batches are padded to a multiple of 8 already: ``--pad-multiple``). Names absent from a PyTorch
#: are skipped.
SIZE_GUARDING = {"triton.mix_order_reduction": False, "shape_padding": False}


def compiled(module: nn.Module, backend: Union[str, Callable] = "inductor") -> nn.Module:
    """``module`` compiled for sizes that vary from batch to batch (``dynamic``): sizes stay symbols, two sizes that
    happen to be equal (a batch's source and target widths) are not merged into one ("duck sizing", which would make
    the equality a guard), and Inductor makes no choice by a size's value (:data:`SIZE_GUARDING`). Each would make a
    batch that breaks it a recompilation of the whole model (minutes on a GPU). The settings are the process's (read
    when a frame is compiled). The module itself (its state, checkpoints) stays as it is."""
    shape_config.use_duck_shape = False
    for name, value in SIZE_GUARDING.items():
        *path, key = name.split(".")
        config = inductor_config
        for part in path:
            config = getattr(config, part)
        if hasattr(config, key):
            setattr(config, key, value)
    return torch.compile(module, dynamic=True, backend=backend)
