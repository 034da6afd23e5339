"""Perplexity of target sentences given their sources (target-target-attention.txt Eq. 13)."""
from __future__ import annotations

import math
from typing import Iterable

import torch

from nmtkit.data.batching import Batch
from nmtkit.models.loss import cross_entropy
from nmtkit.models.seq2seq import Seq2Seq


@torch.no_grad()
def corpus_nll(model: Seq2Seq, batches: Iterable[Batch], device: torch.device) -> tuple[float, int]:
    """Summed negative log-likelihood and number of target tokens (``</s>`` included), each target
    conditioned on its source as decoding conditions it (:meth:`Seq2Seq.score_logits`)."""
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    try:
        for batch in batches:
            batch = batch.to(device)
            logits = model.score_logits(batch)
            total += float(cross_entropy(logits, batch.tgt_out))
            tokens += batch.tgt_tokens
    finally:
        model.train(was_training)
    return total, tokens


def perplexity(nll: float, tokens: int) -> float:
    """ppl(D) = exp(- sum_i log P(y_i | x_i) / sum_i N_i), Eq. 13."""
    return math.exp(nll / max(tokens, 1)) if nll / max(tokens, 1) < 700 else float("inf")
