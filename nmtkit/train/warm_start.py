"""Warm start (``--init-from``): another checkpoint's matching parameters (its optimiser state, if asked,
through :func:`nmtkit.train.optim.load_optimizer_by_name`)."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import torch


class WarmStart(NamedTuple):
    """What :func:`warm_start` did: the model's parameters the checkpoint did not give (``new``), the checkpoint's
    left out (``unused``), the new ones set to zero, and the names of each tensor the model ties (shares) that the
    checkpoint gave several different values for: the first loaded, the others unused (``tied``)."""

    new: list[str]
    unused: list[str]
    zeroed: list[str]
    tied: list[list[str]]


def warm_start(model: torch.nn.Module, ckpt: dict) -> WarmStart:
    """Copy the parameters of ``ckpt`` whose name and shape match and zero the new ones that belong to the model's
    ``bridges`` (dotted module-name suffixes). A tensor the model ties under several names (tied embeddings: the
    target embedding and the output layer) takes one value, the checkpoint's for its first name that matches: a
    checkpoint not tied there gives two, and its others are unused (before, the last one copied won, silently)."""
    source = ckpt["model"]
    own = model.state_dict(keep_vars=True)
    names: dict[int, list[str]] = {}  # (the model's names of each tensor, in the model's order)
    for k, v in own.items():
        names.setdefault(id(v), []).append(k)
    matched = {k: v for k, v in source.items() if k in own and own[k].shape == v.shape}
    tied = []
    for group in (g for g in names.values() if len(g) > 1):
        given = [k for k in group if k in matched]
        if any(not torch.equal(matched[k], matched[given[0]]) for k in given[1:]):
            tied.append(given)
            for k in given[1:]:
                del matched[k]
    model.load_state_dict(matched, strict=False)
    loaded = {id(own[k]) for k in matched}
    new = sorted(k for k in own if id(own[k]) not in loaded)
    unused = sorted(k for k in source if k not in matched)
    zeroed = [k for k in new if is_bridge(k, getattr(model, "bridges", ()))]
    with torch.no_grad():
        for k in zeroed:
            model.get_parameter(k).zero_()
    return WarmStart(new, unused, zeroed, tied)


def is_bridge(parameter: str, bridges: Sequence[str]) -> bool:
    """Whether a parameter's module (its name without the last part) ends with one of ``bridges``."""
    module = "." + parameter.rpartition(".")[0]
    return any(module.endswith("." + b) for b in bridges)
