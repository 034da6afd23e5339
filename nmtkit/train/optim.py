"""Optimisers."""
from __future__ import annotations

from typing import Iterable

import torch

OPTIMIZERS = ("adam", "adadelta", "sgd")
DEFAULT_LR = {"adam": 0.001, "adadelta": 1.0, "sgd": 0.1}


def make_optimizer(name: str, params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float = 0.0):
    """Adam, Adadelta (rho 0.95, eps 1e-6 as in RNNSearch) or plain SGD."""
    params = [p for p in params if p.requires_grad]
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, rho=0.95, eps=1e-6, weight_decay=weight_decay)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r}")


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr
