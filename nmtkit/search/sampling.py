"""Sampling (``translate --sampling``): instead of searching for the most probable output, draw each next token from
the model's distribution, flattened or sharpened by a temperature and restricted to the k most probable tokens; one
sample per sentence. fairseq's ``--sampling`` and OpenNMT-py's ``-random_sampling_topk`` serve back-translation
this way: sampled sources are more varied than beam outputs."""
from __future__ import annotations

from typing import Optional

import torch

from nmtkit.search.top_k import top_k


class Sampler:
    """Draws a token for each row of a step's log-probabilities: from softmax(log p / ``temperature``) over the
    ``k`` most probable tokens (0: all of them), with ``generator`` (seeded: the same draws every run). However
    small the temperature, the draw is well defined: below the gaps between log-probabilities it is the greedy
    choice (ties drawn at random)."""

    def __init__(self, k: int = 0, temperature: float = 1.0, generator: Optional[torch.Generator] = None):
        if temperature <= 0:
            raise ValueError(f"the temperature must be above 0, got {temperature}")
        self.k, self.temperature, self.generator = k, temperature, generator

    def __call__(self, lp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The model's log-probability ``[rows, 1]`` and the id ``[rows, 1]`` of the token drawn for each row of
        ``lp [rows, vocabulary]``."""
        if self.k and self.k < lp.size(1):
            candidates, ids = top_k(lp, self.k)
        else:
            candidates, ids = lp, None
        # exp((log p - max) / T), unnormalised: the most probable token weighs 1, so that however small T is (its
        # quotients overflowing to -inf), no row is all 0 or NaN and a tiny T tends to the greedy choice
        shifted = candidates - candidates.max(dim=1, keepdim=True).values
        weights = torch.where(shifted == 0, 1.0, (shifted / self.temperature).exp()).nan_to_num_(0.0)
        # a row of NaN (a broken model or input): the greedy choice, which is </s> where it is forced
        weights.scatter_add_(1, candidates.argmax(1, keepdim=True), (weights.sum(1, keepdim=True) == 0).to(weights))
        choice = torch.multinomial(weights, 1, generator=self.generator)
        token = ids.gather(1, choice) if ids is not None else choice
        return lp.gather(1, token), token
