"""Optimisers."""
from __future__ import annotations

import inspect
from typing import Iterable, Optional

import torch

OPTIMIZERS = ("adam", "adadelta", "sgd")
DEFAULT_LR = {"adam": 0.001, "adadelta": 1.0, "sgd": 0.1}
NAMES = {"adam": "Adam", "adadelta": "Adadelta", "sgd": "SGD"}  #: as the help and the docs write them


def make_optimizer(name: str, params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float = 0.0,
                   adam_betas: tuple[float, float] = (0.9, 0.999), device: Optional[torch.device] = None):
    """Adam (with ``adam_betas``), Adadelta (rho 0.95, eps 1e-6 as in RNNSearch) or plain SGD; on a CUDA ``device``
    Adam and SGD run fused (one kernel for all parameters; the same update)."""
    params = [p for p in params if p.requires_grad]
    gpu = device is not None and device.type == "cuda"
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, betas=adam_betas, weight_decay=weight_decay, **_fused(torch.optim.Adam, gpu))
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, rho=0.95, eps=1e-6, weight_decay=weight_decay)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay, **_fused(torch.optim.SGD, gpu))
    raise ValueError(f"unknown optimizer {name!r}")


def _fused(optimizer: type, gpu: bool) -> dict:
    """``fused=True`` on a GPU where this PyTorch's ``optimizer`` has it (Adam since 2.0, SGD since 2.3)."""
    return {"fused": True} if gpu and "fused" in inspect.signature(optimizer).parameters else {}


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def load_state_keeping_settings(optimizer: torch.optim.Optimizer, state: dict) -> None:
    """Load a saved optimiser state (moments, step counts) but keep the settings ``optimizer`` was made with (betas,
    weight decay, ...): a resumed run trains with the settings given now, not those saved."""
    settings = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
    optimizer.load_state_dict(state)
    for group, own in zip(optimizer.param_groups, settings):
        group.update(own)
        if group.get("fused") or group.get("capturable"):  # their step counts live beside the parameters, as
            for p in group["params"]:  # float32 (a state saved unfused keeps them on the CPU)
                step = optimizer.state.get(p, {}).get("step")
                if torch.is_tensor(step):
                    optimizer.state[p]["step"] = step.to(p.device, torch.float32)


def load_optimizer_by_name(model: torch.nn.Module, optimizer: torch.optim.Optimizer, ckpt: dict) -> None:
    """Carry optimiser state over for parameters with the same name and shape (``ckpt``'s ``param_names`` say
    which parameter each of its states belongs to): a warm start, or a checkpoint whose parameters came in
    another order."""
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    old_names = ckpt.get("param_names", [])
    old_state = ckpt["optimizer"]["state"]
    own = dict(model.named_parameters())
    state = optimizer.state_dict()
    for i, name in enumerate(names):
        j = old_names.index(name) if name in old_names else None
        if j is not None and j in old_state and all(
                not torch.is_tensor(v) or v.dim() == 0 or v.shape == own[name].shape for v in old_state[j].values()):
            state["state"][i] = old_state[j]
    optimizer.load_state_dict(state)
