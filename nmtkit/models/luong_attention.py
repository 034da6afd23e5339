"""Global and local attention of Luong, Pham and Manning (2015), global-local-attention.md.

One module serves every variant, batched over decoder steps so that the same code runs a
whole teacher-forced sequence ``[B, T, Q]`` or one decoding step ``[B, 1, Q]``:

- scores (Eq. 7): ``dot`` h_t·h̄_s, ``general`` h_tᵀ W_a h̄_s, ``concat`` v_aᵀ tanh(W_a[h_t; h̄_s]),
  or ``location`` a_t = softmax(W_a h_t) over positions (Eq. 8);
- ``global`` attends over the whole sentence; ``local-m`` over the window [p_t − D, p_t + D]
  with p_t = t; ``local-p`` over the window around p_t = S·sigmoid(v_pᵀ tanh(W_p h_t)) (Eq. 9),
  with the weights multiplied by exp(−(s − p_t)² / 2σ²), σ = D/2 (Eq. 10).

Windows are clipped to the sentence and padding never receives weight. Local attention
is computed by masking full-length scores: the same result as gathering the window, with
one batched code path.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from nmtkit.models.attention import masked_softmax

SCORES = ("dot", "general", "concat", "location")
KINDS = ("global", "local-m", "local-p")


class LuongAttention(nn.Module):
    def __init__(self, query_size: int, memory_size: int, score: str = "general", kind: str = "global",
                 window: int = 10, hidden_size: Optional[int] = None, max_positions: int = 100):
        super().__init__()
        if score not in SCORES or kind not in KINDS:
            raise ValueError(f"unknown attention {kind}/{score}")
        if score == "dot" and query_size != memory_size:
            raise ValueError(f"--global-attention dot needs the decoder's state (--dec-size {query_size}) as large as the "
                             f"encoder's ({memory_size})")
        if score == "location" and kind != "global":
            raise ValueError(f"--global-attention location scores are a global attention (Eq. 8), not --attention {kind}")
        if kind != "global" and window < 1:
            raise ValueError("local attention needs a window half-width D >= 1")
        self.score, self.kind, self.window = score, kind, window
        hidden = hidden_size or query_size
        if score == "general":
            self.w_a = nn.Linear(memory_size, query_size, bias=False)  # keys: W_a h̄_s, then h_t · keys
        elif score == "concat":
            self.w_q = nn.Linear(query_size, hidden, bias=False)  # W_a[h_t; h̄_s] = W_q h_t + W_k h̄_s
            self.w_k = nn.Linear(memory_size, hidden)
            self.v_a = nn.Linear(hidden, 1, bias=False)
        elif score == "location":
            self.w_loc = nn.Linear(query_size, max_positions)
        if kind == "local-p":
            self.w_p = nn.Linear(query_size, hidden, bias=False)
            self.v_p = nn.Linear(hidden, 1, bias=False)

    def keys(self, memory: torch.Tensor) -> torch.Tensor:
        """The part of the score that depends only on the source, computed once per sentence."""
        if self.score == "general":
            return self.w_a(memory)
        if self.score == "concat":
            return self.w_k(memory)
        return memory

    def scores(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """score(h_t, h̄_s) for queries ``[B, T, Q]`` and keys ``[B, S, K]``: ``[B, T, S]``."""
        if self.score in ("dot", "general"):
            if query.size(1) == 1:  # one step as keys·h_t: its gradient reaches the keys untransposed (2x faster)
                return torch.bmm(keys, query.transpose(1, 2)).transpose(1, 2)
            return torch.bmm(query, keys.transpose(1, 2))
        if self.score == "concat":
            hidden = torch.tanh(self.w_q(query).unsqueeze(2) + keys.unsqueeze(1))  # [B, T, S, A]
            return self.v_a(hidden).squeeze(-1)
        positions = self.w_loc(query)  # Eq. 8: scores from h_t alone, one per source position
        if keys.size(1) > positions.size(-1):
            raise ValueError(f"location attention covers {positions.size(-1)} positions; the source has {keys.size(1)}")
        return positions[..., :keys.size(1)]

    def centre(self, query: torch.Tensor, steps: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Aligned position p_t ``[B, T]``: t for local-m (clipped to the sentence), Eq. 9 for local-p."""
        if self.kind == "local-m":
            steps = steps.to(query.dtype).expand(query.shape[:2])
            return torch.minimum(steps, (lengths - 1).to(query.dtype).unsqueeze(1))
        return lengths.to(query.dtype).unsqueeze(1) * torch.sigmoid(self.v_p(torch.tanh(self.w_p(query)))).squeeze(-1)

    def forward(self, query: torch.Tensor, keys: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor,
                steps: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Contexts ``[B, T, M]`` and weights ``[B, T, S]`` for queries h_t ``[B, T, Q]``, or ``[B, M]`` and
        ``[B, S]`` for one query ``[B, Q]`` (the attention protocol of :mod:`nmtkit.models.attention`).

        ``steps`` ``[T]`` or ``[B, T]`` are the target positions t of the queries (local-m; default 0..T-1). The
        queries may have a multiple of the memory's rows, each consecutive group of them one memory row's (a beam's
        hypotheses reading their sentence's memory: :attr:`nmtkit.models.state.DecoderState.shared`).
        """
        if query.dim() == 2:
            context, weights = self(query.unsqueeze(1), keys, memory, mask, steps)
            return context.squeeze(1), weights.squeeze(1)
        rows, sentences, length = query.size(0), keys.size(0), query.size(1)
        if rows != sentences:  # a sentence's rows as further query steps of one row: [B, g T, Q]
            at = steps if steps is not None else torch.arange(length, device=query.device)
            context, weights = self(query.reshape(sentences, -1, query.size(-1)), keys, memory, mask,
                                    at.expand(rows, length).reshape(sentences, -1))
            return context.reshape(rows, length, -1), weights.reshape(rows, length, -1)
        scores = self.scores(query, keys)
        allowed = mask.unsqueeze(1).expand_as(scores)
        if self.kind != "global":
            lengths = mask.sum(1)
            if steps is None:
                steps = torch.arange(query.size(1), device=query.device)
            p = self.centre(query, steps, lengths).unsqueeze(-1)  # [B, T, 1]
            s = torch.arange(scores.size(-1), device=query.device, dtype=query.dtype)
            allowed = allowed & ((s - p).abs() <= self.window)
        weights = masked_softmax(scores, allowed)
        if self.kind == "local-p":
            sigma = self.window / 2
            weights = weights * torch.exp(-((s - p) ** 2) / (2 * sigma ** 2))  # Eq. 10
        return torch.bmm(weights, memory), weights
