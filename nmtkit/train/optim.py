"""Optimisers and the validation-driven learning-rate schedule."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Optional

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


@dataclass
class Schedule:
    """Learning-rate decay on a validation drop, and early stopping with patience.

    After each validation: if the metric is worse than the previous one, multiply the
    learning rate by ``decay`` (target-target-attention.txt §3.1 halves it when BLEU
    drops); if it has not beaten the best for ``patience`` validations, stop.
    """

    lr: float
    metric: str = "bleu"  # bleu (higher is better) or ppl (lower is better)
    decay: float = 0.5
    patience: int = 10
    min_lr: float = 0.0
    best: Optional[float] = None
    last: Optional[float] = None
    bad: int = 0

    def better(self, a: float, b: Optional[float]) -> bool:
        return b is None or (a > b if self.metric == "bleu" else a < b)

    def update(self, value: float) -> tuple[bool, bool]:
        """Record a validation result; return (is_new_best, should_stop)."""
        if self.last is not None and not self.better(value, self.last) and value != self.last:
            self.lr = max(self.min_lr, self.lr * self.decay)
        self.last = value
        improved = self.better(value, self.best)
        if improved:
            self.best, self.bad = value, 0
        else:
            self.bad += 1
        return improved, self.patience > 0 and self.bad >= self.patience

    def state(self) -> dict:
        return asdict(self)
