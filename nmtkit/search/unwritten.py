"""The ids a search never writes: ``<pad>`` and ``<s>``. A model's output layer covers the whole target vocabulary,
these two included, and may give them some probability (a weak model, sampling at a high temperature, a wide beam);
written, they vanish from the text (:meth:`~nmtkit.data.vocab.Vocab.decode` drops them) but count in its tokens
and scores, and feed the next step. fairseq, OpenNMT-py and Marian mask them the same way. ``<unk>`` stays
writable, as theirs do by default."""
from __future__ import annotations

import torch

from nmtkit.data.vocab import BOS, PAD


def mask_unwritten(lp: torch.Tensor) -> torch.Tensor:
    """A step's log-probabilities ``[rows, vocab]`` with ``<pad>`` and ``<s>`` at -inf, in place (ids below the
    vocabulary's first word keep their place in a shortlist's columns too)."""
    lp[:, PAD] = -torch.inf
    lp[:, BOS] = -torch.inf
    return lp
