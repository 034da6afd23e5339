"""Incremental decoding state, kept apart from the model weights."""
from __future__ import annotations

from typing import Iterable, Mapping

import torch


class DecoderState:
    """Named batch-first tensors that a decoder carries from one step to the next.

    It holds everything incremental: the encoder memory and its precomputed keys, RNN
    hidden states, a growing target memory, key/value caches. Every tensor has the batch
    (sentences × beams) as dimension 0, so :meth:`reorder` serves all models.

    Tensors named in ``static`` depend only on the source sentence (encoder memory, keys,
    masks): all beams of a sentence hold the same rows, so a reorder that keeps every row
    within its sentence (a beam step) leaves them alone instead of copying them.
    """

    __slots__ = ("tensors", "static")

    def __init__(self, tensors: Mapping[str, torch.Tensor], static: Iterable[str] = ()):
        self.tensors = dict(tensors)
        self.static = frozenset(static)

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def replace(self, **updates: torch.Tensor) -> "DecoderState":
        """A new state with some tensors replaced or added."""
        return DecoderState({**self.tensors, **updates}, self.static)

    def reorder(self, index: torch.Tensor, within_sentences: bool = False) -> "DecoderState":
        """Select rows ``index`` of every tensor: follow beam back-pointers, drop finished sentences.

        With ``within_sentences`` the caller promises that every row moves to a row of the
        same sentence, so static tensors are kept as they are.
        """
        return DecoderState({k: v if within_sentences and k in self.static else v.index_select(0, index)
                             for k, v in self.tensors.items()}, self.static)

    @property
    def batch_size(self) -> int:
        return next(iter(self.tensors.values())).size(0)
