"""``train --diagnostics``: what a run logs beside its loss to explain how a model learns: the gradient norm of each
parameter group the model names (:meth:`~nmtkit.models.seq2seq.Seq2Seq.gradient_groups`) and the model's own
statistics of a training batch (:meth:`~nmtkit.models.seq2seq.Seq2Seq.diagnostics`)."""
from __future__ import annotations

import math

from torch import nn


def gradient_norms(model: nn.Module, groups: dict[str, str]) -> dict[str, float]:
    """The L2 norm of the gradients of each group's parameters (those whose names are the group's module path or
    under it), by group; a group without a parameter that has a gradient is left out."""
    squares: dict[str, float] = {}
    for name, param in model.named_parameters():
        if param.grad is None:
            continue
        for group, path in groups.items():
            if name.startswith(path + ".") or name == path:
                squares[group] = squares.get(group, 0.0) + float(param.grad.detach().float().pow(2).sum())
    return {group: round(math.sqrt(total), 6) for group, total in squares.items()}
