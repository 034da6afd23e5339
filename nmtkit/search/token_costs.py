"""Token costs (``translate --edit-cost C``): a model whose score of each target token at every step is its
log-probability less the token's cost, so that the search takes a costly token only where the model prefers it by
more than its cost.

Conservative automatic post-editing: multi-source-attention.txt §4.2 finds APE systems at best equal to leaving
the MT alone, so an APE system should edit only where it is confident. Every edit operation (anything but
``<keep>`` and the end of the sequence, after which the MT's remaining words are kept) costs C nats: the output
changes the MT only where the model prefers a change by more than C. C = 0 is the plain search, a large C gives
the MT unchanged (the do-nothing baseline); tune C on dev data. Scores (``--n-best``) include the costs.
"""
from __future__ import annotations

import torch

from nmtkit.models.seq2seq import AttentionWeights, Seq2Seq
from nmtkit.models.state import DecoderState
from nmtkit.search.wrapped import Wrapped


class TokenCosts(Wrapped):
    """``model`` with ``costs [V]`` (per target id, ≥ 0) taken off each step's log-probabilities."""

    costs: torch.Tensor

    def __init__(self, model: Seq2Seq, costs: torch.Tensor):
        super().__init__(model)
        self.register_buffer("costs", costs.float())

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        log_probs, state, weights = self.model.decode_step(prev, state)
        if self.costs.device != log_probs.device or self.costs.dtype != log_probs.dtype:  # once, not every step
            self.costs = self.costs.to(log_probs)
        return log_probs - self.costs, state, weights


def edit_costs(size: int, free: list[int], cost: float) -> torch.Tensor:
    """Costs over a target vocabulary of ``size`` ids: ``cost`` for each, 0 for the ids in ``free``."""
    costs = torch.full((size,), float(cost))
    costs[torch.tensor(free, dtype=torch.long)] = 0.0
    return costs
