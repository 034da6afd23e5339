"""A model that decodes through another (:class:`Wrapped`): what the search asks of a model, handed on to the wrapped
one; a wrapper overrides what it changes (a shortlist's restricted output layer, token costs)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

import torch

from nmtkit.data.batching import Batch
from nmtkit.models.seq2seq import AttentionWeights, Seq2Seq
from nmtkit.models.state import DecoderState


class Wrapped(Seq2Seq):
    """``model`` to the search, unchanged until a subclass overrides a method."""

    def __init__(self, model: Seq2Seq):
        super().__init__()
        self.model = model
        self.inputs, self.attention_labels = model.inputs, model.attention_labels
        self.merges_states = model.merges_states

    def encode(self, batch: Batch) -> DecoderState:
        return self.model.encode(batch)

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        return self.model.decode_step(prev, state)

    def output_ids(self, tokens: Sequence[int]) -> list[int]:
        return self.model.output_ids(tokens)

    def max_output_len(self, batch: Batch, a: float, b: int) -> torch.Tensor:
        return self.model.max_output_len(batch, a, b)

    def input_limit(self) -> Optional[int]:
        return self.model.input_limit()

    def output_limit(self) -> Optional[int]:
        return self.model.output_limit()

    def choose_attention(self, layer: Optional[int] = None, head: Optional[int] = None) -> None:
        self.model.choose_attention(layer, head)

    @contextmanager
    def attention_weights(self, wanted: bool) -> Iterator[None]:
        with self.model.attention_weights(wanted):
            yield
