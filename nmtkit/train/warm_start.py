"""Warm start (``--init-from``): another checkpoint's matching parameters (its optimiser state, if asked,
through :func:`nmtkit.train.optim.load_optimizer_by_name`)."""
from __future__ import annotations

from typing import Sequence

import torch


def warm_start(model: torch.nn.Module, ckpt: dict) -> tuple[list[str], list[str], list[str]]:
    """Copy the parameters of ``ckpt`` whose name and shape match and zero the new ones that belong to
    the model's ``bridges`` (dotted module-name suffixes); return the (new, unused, zeroed) names."""
    source = ckpt["model"]
    own = model.state_dict()
    matched = {k: v for k, v in source.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(matched, strict=False)
    new = sorted(k for k in own if k not in matched)
    unused = sorted(k for k in source if k not in matched)
    zeroed = [k for k in new if is_bridge(k, getattr(model, "bridges", ()))]
    with torch.no_grad():
        for k in zeroed:
            model.get_parameter(k).zero_()
    return new, unused, zeroed


def is_bridge(parameter: str, bridges: Sequence[str]) -> bool:
    """Whether a parameter's module (its name without the last part) ends with one of ``bridges``."""
    module = "." + parameter.rpartition(".")[0]
    return any(module.endswith("." + b) for b in bridges)
