"""tanh through the sigmoid on the CPU, where PyTorch's sigmoid runs several times faster.

tanh(x) = 2 σ(2x) − 1 exactly; on the 2-core AVX-512 benchmark machine (torch 2.13,
``python bench/kernels.py``) a [160, 40, 512] tensor takes 6.1 ms through torch.tanh, 0.95 ms
through torch.sigmoid and 2.7 ms through this function. Other devices use ``torch.tanh``.
"""
from __future__ import annotations

import torch


def tanh(x: torch.Tensor) -> torch.Tensor:
    """tanh(x); on the CPU computed as 2 σ(2x) − 1 (a new tensor; ``x`` is not modified)."""
    if not x.is_cpu:
        return torch.tanh(x)
    y = torch.sigmoid(2 * x)
    return y.mul_(2).sub_(1) if not (torch.is_grad_enabled() and y.requires_grad) else 2 * y - 1
