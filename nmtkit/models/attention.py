"""Source attention mechanisms."""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn


def masked_softmax(scores: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    """Softmax over the last dimension, giving exactly zero weight where ``mask`` is False (None: no mask)."""
    return torch.softmax(scores if mask is None else scores.masked_fill(~mask, float("-inf")), dim=-1)


class MLPAttention(nn.Module):
    """Additive attention of Bahdanau et al. (2015): e_ij = v^T tanh(W s_{i-1} + U h_j).

    ``U h_j`` does not depend on the decoder step, so :meth:`keys` computes it once per
    sentence. With ``project_query=False`` the caller passes ``W s_{i-1}`` already computed
    (RNNSearch fuses W with its recurrent weights into one matrix product per step).

    The memory may be empty (``S = 0``): the context is then a zero vector, as target attention
    needs at its first step (target-target-attention.txt, footnote 5).
    """

    def __init__(self, query_size: int, memory_size: int, hidden_size: int, project_query: bool = True):
        super().__init__()
        self.query = nn.Linear(query_size, hidden_size, bias=False) if project_query else None
        self.key = nn.Linear(memory_size, hidden_size)
        self.v = nn.Linear(hidden_size, 1, bias=False)

    def keys(self, memory: torch.Tensor) -> torch.Tensor:
        """U h_j for every memory position: ``[B, S, M] -> [B, S, A]``."""
        return self.key(memory)

    def forward(self, query: torch.Tensor, keys: torch.Tensor, memory: torch.Tensor,
                mask: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Context ``[B, M]`` and weights ``[B, S]`` for a query ``[B, Q]`` (or ``[B, A]`` if projected).

        ``mask [B, S]`` is True at real positions; None means all are real."""
        q = self.query(query) if self.query is not None else query
        # Bahdanau Eq. (A.1.2) e_ij = v^T tanh(x) = 2 v^T σ(2x) − Σv: σ is several times faster than tanh
        # on CPUs (nmtkit.models.activation), and the softmax ignores the constant −Σv, so it is left out.
        hidden = (keys + q.unsqueeze(1)).mul_(2).sigmoid_()
        scores = hidden @ (2 * self.v.weight[0])  # e_ij + Σv
        weights = masked_softmax(scores, mask)  # alpha_ij, target-target-attention.txt Eq. 4
        context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)  # c_i = sum_j alpha_ij h_j, Eq. 5
        return context, weights
