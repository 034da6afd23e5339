"""Incremental decoding state, kept apart from the model weights."""
from __future__ import annotations

from typing import Mapping

import torch


class DecoderState:
    """Named batch-first tensors that a decoder carries from one step to the next.

    It holds everything incremental: the encoder memory and its precomputed keys, RNN
    hidden states, a growing target memory, key/value caches. Every tensor has the batch
    (sentences × beams) as dimension 0, so :meth:`reorder` serves all models.
    """

    __slots__ = ("tensors",)

    def __init__(self, tensors: Mapping[str, torch.Tensor]):
        self.tensors = dict(tensors)

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def replace(self, **updates: torch.Tensor) -> "DecoderState":
        """A new state with some tensors replaced or added."""
        return DecoderState({**self.tensors, **updates})

    def reorder(self, index: torch.Tensor) -> "DecoderState":
        """Select rows ``index`` of every tensor: follow beam back-pointers, drop finished sentences."""
        return DecoderState({k: v.index_select(0, index) for k, v in self.tensors.items()})

    @property
    def batch_size(self) -> int:
        return next(iter(self.tensors.values())).size(0)
