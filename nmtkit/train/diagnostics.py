"""``train --diagnostics``: what a run logs beside its loss to explain how a model learns: the gradient norm of each
parameter group the model names (:meth:`~nmtkit.models.seq2seq.Seq2Seq.gradient_groups`) and the model's own
statistics of a training batch (:meth:`~nmtkit.models.seq2seq.Seq2Seq.diagnostics`)."""
from __future__ import annotations

import math
import re
from typing import Mapping

import torch
from torch import nn

from nmtkit.models.seq2seq import Paths


def group_pattern(paths: Paths) -> re.Pattern:
    """A pattern matching the names of the parameters under any of ``paths``."""
    alternatives = [re.escape(path).replace(r"\*", r"[^.]+") for path in ((paths,) if isinstance(paths, str) else paths)]
    return re.compile(rf"(?:{'|'.join(alternatives)})(?:\..+)?")


def gradient_norms(model: nn.Module, groups: Mapping[str, Paths]) -> dict[str, float]:
    """The L2 norm of the gradients of each group's parameters (those whose names are one of the group's module
    paths or under one), by group; a group without a parameter that has a gradient is left out. One read from the
    device."""
    named = [(name, p.grad) for name, p in model.named_parameters() if p.grad is not None]
    if not named:
        return {}
    squares = torch.stack([g.detach().float().pow(2).sum() for _, g in named]).tolist()
    patterns = {group: group_pattern(paths) for group, paths in groups.items()}
    totals: dict[str, float] = {}
    for (name, _), square in zip(named, squares):
        for group, pattern in patterns.items():
            if pattern.fullmatch(name):
                totals[group] = totals.get(group, 0.0) + square
    return {group: round(math.sqrt(total), 6) for group, total in totals.items()}
