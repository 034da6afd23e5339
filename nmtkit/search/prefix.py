"""Target prefixes (``translate --prefix-file``): each output starts with given tokens, then the search goes on.

The prefix of each sentence comes with its inputs, as the batch stream ``prefix`` (target token ids). A
:class:`Prefixed` model forces them: at each of the first steps, every token but the sentence's next prefix token
gets log-probability -inf, so that greedy search, beam search and sampling all write the prefix and continue from
it; a sentence without a prefix (an empty one) decodes freely. The prefix's own log-probability counts in the
output's score, as the model gives it. Outputs include the prefix (as fairseq's and Marian's do), and may run to
the prefix's length and the limit's constant ``b`` more (:meth:`Prefixed.max_output_len`).
"""
from __future__ import annotations

import torch

from nmtkit.data.batching import Batch
from nmtkit.models.seq2seq import AttentionWeights, Seq2Seq
from nmtkit.models.state import DecoderState
from nmtkit.search.wrapped import Wrapped

PREFIX = "prefix"  #: the batch stream of the target prefixes
_IDS = "prefix.ids"  #: the state's prefix tokens still to force ``[B, P]``, -1 where a row's prefix has ended


class Prefixed(Wrapped):
    """A model whose outputs start with each sentence's prefix (the batch stream ``prefix``, if any)."""

    def __init__(self, model: Seq2Seq):
        super().__init__(model)
        self.merges_states = False  # (a prefix's ids, and -1 past its end, do not pad with zeros)

    def encode(self, batch: Batch) -> DecoderState:
        state = self.model.encode(batch)
        if PREFIX not in batch:
            return state
        stream = batch[PREFIX]
        width = int(stream.lengths.max()) - 1  # (each row ends with </s>)
        if width <= 0:
            return state
        ended = torch.arange(width, device=stream.data.device) >= (stream.lengths - 1).unsqueeze(1)
        ids = stream.data[:, :width].masked_fill(ended, -1)
        return state.like({**state.tensors, _IDS: ids}, static=state.static | {_IDS})

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        if _IDS not in state:
            return self.model.decode_step(prev, state)
        ids = state[_IDS]
        inner = state.like({k: v for k, v in state.tensors.items() if k != _IDS}, static=state.static - {_IDS})
        log_probs, inner, weights = self.model.decode_step(prev, inner)
        token = ids[:, 0]
        other = torch.arange(log_probs.size(1), device=log_probs.device) != token.unsqueeze(1)
        log_probs = log_probs.masked_fill(other & (token >= 0).unsqueeze(1), -torch.inf)
        if ids.size(1) == 1:  # the prefixes are written: the model's own state from here on
            return log_probs, inner, weights
        return log_probs, inner.like({**inner.tensors, _IDS: ids[:, 1:]}, static=inner.static | {_IDS}), weights

    def max_output_len(self, batch: Batch, a: float, b: int) -> torch.Tensor:
        """The model's limit, and never less than a sentence's prefix and ``b`` tokens more: room for the search to go
        on (and for its n-best to differ) after a prefix as long as the limit."""
        limit = self.model.max_output_len(batch, a, b)
        return torch.maximum(limit, prefix_lengths(batch).to(limit) + b)


def prefix_lengths(batch: Batch) -> torch.Tensor:
    """Each sentence's prefix length in tokens ``[B]`` (0 for none)."""
    if PREFIX not in batch:
        return torch.zeros(batch.size, dtype=torch.long)
    return (batch[PREFIX].lengths - 1).clamp(min=0)

