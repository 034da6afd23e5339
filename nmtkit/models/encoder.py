"""Recurrent encoders."""
from __future__ import annotations

from typing import Union

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

Final = Union[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]


class RNNEncoder(nn.Module):
    """One or more layers of GRU or LSTM, bidirectional or not, over embedded sources.

    Returns the memory ``[B, S, D·H]`` (the directions' states concatenated, zeros at
    padding), the mask ``[B, S]`` (True at real tokens) and each layer's final state with
    the directions concatenated, ``[L, B, D·H]`` (a pair ``(h, c)`` for LSTMs). Padding
    never reaches a state: sequences are packed.
    """

    def __init__(self, input_size: int, hidden_size: int, layers: int = 1, cell: str = "gru",
                 bidirectional: bool = True, dropout: float = 0.0):
        super().__init__()
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(input_size, hidden_size, num_layers=layers, batch_first=True, bidirectional=bidirectional,
                       dropout=dropout if layers > 1 else 0.0)
        self.directions = 2 if bidirectional else 1
        self.output_size = self.directions * hidden_size

    def _per_layer(self, final: torch.Tensor) -> torch.Tensor:
        """``[L·D, B, H]`` -> ``[L, B, D·H]``."""
        layers_dirs, batch, hidden = final.shape
        return final.view(-1, self.directions, batch, hidden).transpose(1, 2).reshape(-1, batch, self.directions * hidden)

    def forward(self, embedded: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Final]:
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, final = self.rnn(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=embedded.size(1))
        mask = torch.arange(embedded.size(1), device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)
        final = tuple(self._per_layer(f) for f in final) if isinstance(final, tuple) else self._per_layer(final)
        return memory, mask, final
