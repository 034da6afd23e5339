"""Multi-head scaled dot-product attention (Vaswani et al. 2017; bidirectional-target-attention.txt Eq. 6).

head_i = Attention(q W_i^q / sqrt(d_s), k W_i^k, v W_i^v), MultiHead = Concat(head_1..head_s) W^o.
PyTorch's fused ``scaled_dot_product_attention`` computes it when no weights are asked for; the
explicit softmax only when they are (attention files: the attention over a memory, never causal), averaged over
the heads or of one head.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn

#: a decoder's earlier keys and values ``[B, heads, T, d_head]``, as a function appending a step's to them (each
#: along dimension 2): what incremental self-attention attends to
Cache = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


class MultiHeadAttention(nn.Module):
    """``heads`` heads over ``d_model``; self-attention projects q, k and v in one matrix product, attention
    over a memory projects its keys and values once (:meth:`keys_values`) for every query step."""

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0, self_attention: bool = True,
                 memory_kv: bool = True):
        """``memory_kv=False``: attention over memories whose keys and values other maps project
        (:meth:`keys_values` with ``kv``)."""
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model {d_model} is not a multiple of heads {heads}")
        self.heads, self.d_head, self.dropout = heads, d_model // heads, dropout
        if self_attention:
            self.qkv = nn.Linear(d_model, 3 * d_model)
        else:
            self.q = nn.Linear(d_model, d_model)
            if memory_kv:
                self.kv = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, T, d]`` -> ``[B, heads, T, d_head]``."""
        return x.view(x.size(0), x.size(1), self.heads, self.d_head).transpose(1, 2)

    def keys_values(self, memory: torch.Tensor, kv: Optional[nn.Linear] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values ``[B, heads, S, d_head]`` of a memory ``[B, S, d]`` (through the map ``kv`` if given)."""
        k, v = (kv or self.kv)(memory).chunk(2, dim=-1)
        return self._split(k), self._split(v)

    def self_attend(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, causal: bool = False,
                    cache: Optional[Cache] = None) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Self-attention of ``x [B, T, d]``: its output and its keys and values (with ``cache``, which appends them
        to the keys and values of earlier steps: incremental decoding, where every earlier position is visible and
        ``causal`` is not needed). ``mask`` hides an encoder's padding; ``causal`` hides a decoder's later
        positions (and so its padding, which follows its tokens): one or the other. Nothing asks for the weights of
        self-attention: it always runs fused."""
        q, k, v = self.qkv(x).view(x.size(0), x.size(1), 3, self.heads, self.d_head).permute(2, 0, 3, 1, 4).unbind(0)
        if cache is not None:
            k, v = cache(k, v)
        if causal and mask is not None:
            raise ValueError("causal self-attention takes no mask")
        out, _ = self.attend(q, k, v, mask, False, causal=causal)
        return out, (k, v)

    def attend_memory(self, x: torch.Tensor, keys_values: tuple[torch.Tensor, torch.Tensor],
                      mask: Optional[torch.Tensor], weights: bool = False, head: Optional[int] = None
                      ) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Attention of ``x [R, T, d]`` over a memory's :meth:`keys_values` and ``mask`` of ``B`` sentences: ``R =
        B`` (one row a sentence) or a multiple (each ``R // B`` consecutive rows a sentence's, e.g. a beam's
        hypotheses: :attr:`nmtkit.models.state.DecoderState.beams`), whose queries then read their memory together."""
        q, rows, steps = self._split(self.q(x)), x.size(0), x.size(1)
        sentences = keys_values[0].size(0)
        if rows == sentences:
            return self.attend(q, *keys_values, mask, weights, head)
        q = q.unflatten(0, (sentences, -1)).transpose(1, 2).flatten(2, 3)  # [B, h, (R / B) T, d_head]
        out, w = self.attend(q, *keys_values, mask, weights, head)
        return out.reshape(rows, steps, -1), None if w is None else w.reshape(rows, steps, -1)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor], weights: bool,
               head: Optional[int] = None, causal: bool = False) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Heads ``[B, h, T, d_head]`` attending to ``k, v [B, h, S, d_head]``; ``mask`` (True: visible) broadcasts
        to ``[B, h, T, S]``. Returns the projected output ``[B, T, d]`` and, if asked, the weights ``[B, T, S]``
        of ``head`` (0-based), or averaged over the heads. ``causal`` (T = S, no mask): query i sees keys 0..i, in
        the fused kernel only (:meth:`self_attend`'s)."""
        p = self.dropout if self.training else 0.0
        if not weights:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal)
            w = None
        else:
            if causal:
                raise ValueError("causal attention runs fused, without weights")
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)
            if mask is not None:
                scores = scores.masked_fill(~mask, -torch.inf)
            probs = torch.softmax(scores, dim=-1)
            o = F.dropout(probs, p, self.training) @ v
            w = probs.mean(1) if head is None else probs[:, head]
        return self.out(o.transpose(1, 2).reshape(q.size(0), q.size(2), -1)), w
