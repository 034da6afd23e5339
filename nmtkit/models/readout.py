"""The deep output layer of the RNN decoders (Bahdanau et al. 2015; target-target-attention.txt Eq. 3, 9, 11)."""
from __future__ import annotations

from typing import Mapping, Optional

import torch
from torch import nn


class DeepOutput(nn.Module):
    """t_j = maxout(U_o s_j + V_o E y_{j-1} + C_o c_j + Σ_k W_k x_k) over pairs of units, logits = W_o t_j.

    ``base`` is the concatenation [s_j; E y_{j-1}; c_j] (one map, with the bias); ``extras`` name
    further terms x_k (the target context c^d_j of Eq. 11, R̃ of Eq. 19), each with its own map
    so that a model without them is the same model minus those maps (warm starts rely on it).
    Works on one step ``[B, .]`` or all steps ``[B, T, .]``.
    """

    def __init__(self, base_size: int, extras: Mapping[str, int], readout_size: int, vocab_size: int,
                 dropout: float):
        super().__init__()
        self.base = nn.Linear(base_size, 2 * readout_size)
        self.extras = nn.ModuleDict({name: nn.Linear(size, 2 * readout_size, bias=False) for name, size in extras.items()})
        self.output = nn.Linear(readout_size, vocab_size)
        self.dropout = nn.Dropout(dropout)

    def term(self, name: str, x: torch.Tensor) -> torch.Tensor:
        """W_k x_k, for a term that is constant over the steps and computed once (``offset`` of :meth:`forward`)."""
        return self.extras[name](x)

    def forward(self, base: torch.Tensor, extras: Mapping[str, torch.Tensor] = {},
                offset: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Logits from the base inputs, the extra terms' inputs and a precomputed ``offset [B, 2R]``."""
        t = self.base(base)
        for name, x in extras.items():
            t = t + self.extras[name](x)
        if offset is not None:
            t = t + (offset.unsqueeze(1) if t.dim() == 3 else offset)
        t = t.view(*t.shape[:-1], -1, 2).amax(-1)
        return self.output(self.dropout(t))
