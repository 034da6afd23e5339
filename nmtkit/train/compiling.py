"""``train --compile``: the training forward pass through ``torch.compile``, for batches of every shape with one
compilation."""
from __future__ import annotations

from typing import Callable, Union

import torch
import torch.fx.experimental._config as shape_config
from torch import nn


def compiled(module: nn.Module, backend: Union[str, Callable] = "inductor") -> nn.Module:
    """``module`` compiled for sizes that vary from batch to batch (``dynamic``): sizes stay symbols, and two sizes
    that happen to be equal (a batch's source and target widths) are not merged into one ("duck sizing"), which
    would make the equality a guard and each batch that breaks it a recompilation of the whole model (minutes on a
    GPU: issue 33). The module itself (its state, checkpoints) stays as it is."""
    shape_config.use_duck_shape = False  # (read when a frame is traced, so set for the process)
    return torch.compile(module, dynamic=True, backend=backend)
