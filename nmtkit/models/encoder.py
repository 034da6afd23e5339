"""Recurrent encoders."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class BiRNNEncoder(nn.Module):
    """Bidirectional GRU or LSTM over embedded sources; padding never reaches the states.

    Returns the memory ``[B, S, 2H]`` (forward and backward states concatenated, zeros at
    padding) and the mask ``[B, S]`` (True at real tokens).
    """

    def __init__(self, input_size: int, hidden_size: int, layers: int = 1, cell: str = "gru", dropout: float = 0.0):
        super().__init__()
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(input_size, hidden_size, num_layers=layers, batch_first=True, bidirectional=True,
                       dropout=dropout if layers > 1 else 0.0)
        self.output_size = 2 * hidden_size

    def forward(self, embedded: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=embedded.size(1))
        mask = torch.arange(embedded.size(1), device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)
        return memory, mask
