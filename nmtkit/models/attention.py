"""The attention protocol, additive (MLP) attention, and target attention over the decoder's own states.

Every attention of nmtkit follows one protocol (:class:`Attention`), so a decoder, or a
combination of several encoders' attention, treats them alike:

- ``keys(memory)``: the part of the scores that depends only on the memory, once per sentence;
- ``attention(query, keys, memory, mask) -> (context, weights)``: a query ``[B, Q]`` (one step)
  or ``[B, T, Q]`` (several) gives contexts ``[B, (T,) M]`` and weights ``[B, (T,) S]`` that sum to
  one over the real positions and are exactly zero at padding.

Implemented by :class:`MLPAttention` (Bahdanau), :class:`TargetAttention` and
:class:`~nmtkit.models.luong_attention.LuongAttention`.
"""
from __future__ import annotations

from typing import Optional, Protocol

import torch
from torch import nn


def masked_softmax(scores: torch.Tensor, mask: Optional[torch.Tensor], empty_rows: bool = False) -> torch.Tensor:
    """Softmax over the last dimension, giving exactly zero weight where ``mask`` is False (None: no mask); with
    ``empty_rows``, a row whose positions are all masked gets zero weights everywhere (else NaN)."""
    if mask is None:
        return torch.softmax(scores, dim=-1)
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return weights.nan_to_num_(0.0) if empty_rows else weights


def additive_scores(x: torch.Tensor, v: nn.Linear) -> torch.Tensor:
    """v^T tanh(x) + Σv over the last dimension of ``x`` = W s + U h (which it overwrites).

    Bahdanau Eq. (A.1.2) e_ij = v^T tanh(x) = 2 v^T σ(2x) − Σv: σ is several times faster than tanh on CPUs
    (nmtkit.models.activation), and a softmax over scores of one ``v`` ignores the constant −Σv, so it is left out.
    """
    return x.mul_(2).sigmoid_() @ (2 * v.weight[0])


class Attention(Protocol):
    """What every attention mechanism provides (see the module's docstring)."""

    def keys(self, memory: torch.Tensor) -> torch.Tensor: ...

    def __call__(self, query: torch.Tensor, keys: torch.Tensor, memory: torch.Tensor,
                 mask: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]: ...


class MLPAttention(nn.Module):
    """Additive attention of Bahdanau et al. (2015): e_ij = v^T tanh(W s_{i-1} + U h_j).

    ``U h_j`` does not depend on the decoder step, so :meth:`keys` computes it once per
    sentence. With ``project_query=False`` the caller passes ``W s_{i-1}`` already computed
    (RNNSearch's GRU cell fuses W with its recurrent weights into one matrix product per step).

    The memory may be empty (``S = 0``): the context is then a zero vector, as target attention
    needs at its first step (target-target-attention.txt, footnote 5).
    """

    empty_rows = False  #: whether a row of the mask may be all False (its context then zero)

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
        """Context ``[B, (T,) M]`` and weights ``[B, (T,) S]`` for a query ``[B, (T,) Q]`` (``A`` wide if projected).

        ``mask [B, S]`` is True at real positions; None means all are real. A query of one step may have a
        multiple of the memory's rows, each consecutive group of them one memory row's (a beam's hypotheses
        reading their sentence's memory: :attr:`nmtkit.models.state.DecoderState.shared`)."""
        q = self.query(query) if self.query is not None else query
        rows, sentences = q.size(0), keys.size(0)
        if q.dim() == 3:  # [B, T, S, A]: every step against every position
            q = q.unsqueeze(2)
        else:  # [B, g, S, A]: each memory row's g queries (g = 1 but in a beam search) against its positions
            q = q.view(sentences, rows // max(sentences, 1), 1, q.size(-1))
        scores = additive_scores(keys.unsqueeze(1) + q, self.v)  # e_ij + Σv
        # alpha_ij and c_i = sum_j alpha_ij h_j (target-target-attention.txt Eq. 4-5)
        weights = masked_softmax(scores, None if mask is None else mask.unsqueeze(1), self.empty_rows)
        context = torch.bmm(weights, memory)
        if query.dim() == 3:
            return context, weights
        return context.view(rows, -1), weights.view(rows, -1)


class TargetAttention(MLPAttention):
    """Target-target attention (target-target-attention.txt Eq. 6-7): MLP attention from s_{j-1}
    over the decoder's previous states s_1..s_{j-1}, a memory that grows by one state per step.

    The memory and its keys U_d s_t + b_d live in the decoding state; :meth:`extend` appends a
    new state and its key, so a step scores the history without recomputing it. At the first
    step the memory is empty and the context is zero (footnote 5). In a merged state (continuous batching) a row's
    memory is padded on the left, masked; at the row's first step all of it is, and its context is zero alike.
    """

    empty_rows = True

    def empty(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """An empty memory ``[B, 0, H]`` and its keys ``[B, 0, A]`` for states like ``state [B, H]``."""
        return state.new_zeros(state.size(0), 0, state.size(1)), state.new_zeros(state.size(0), 0, self.key.out_features)

    def extend(self, memory: torch.Tensor, keys: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """M^{j+1} = M^j ∪ {s_j}: the memory and keys with ``state [B, H]`` appended."""
        return torch.cat([memory, state.unsqueeze(1)], 1), torch.cat([keys, self.keys(state).unsqueeze(1)], 1)
