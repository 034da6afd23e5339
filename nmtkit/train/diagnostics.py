"""``train --diagnostics``: what a run logs beside its loss to explain how a model learns: the gradient norm of each
parameter group the model names (:meth:`~nmtkit.models.seq2seq.Seq2Seq.gradient_groups`) and the model's own
statistics of a training batch (:meth:`~nmtkit.models.seq2seq.Seq2Seq.diagnostics`)."""
from __future__ import annotations

import math

import torch
from torch import nn


def gradient_norms(model: nn.Module, groups: dict[str, str]) -> dict[str, float]:
    """The L2 norm of the gradients of each group's parameters (those whose names are the group's module path or
    under it), by group; a group without a parameter that has a gradient is left out. One read from the device."""
    named = [(name, p.grad) for name, p in model.named_parameters() if p.grad is not None]
    if not named:
        return {}
    squares = torch.stack([g.detach().float().pow(2).sum() for _, g in named]).tolist()
    totals: dict[str, float] = {}
    for (name, _), square in zip(named, squares):
        for group, path in groups.items():
            if name.startswith(path + ".") or name == path:
                totals[group] = totals.get(group, 0.0) + square
    return {group: round(math.sqrt(total), 6) for group, total in totals.items()}
