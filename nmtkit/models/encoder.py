"""Encoders: recurrent over embedded inputs (:class:`RNNEncoder`) and over a text stream's token ids with their own
embeddings (:class:`TextEncoder`); a projection of an image's feature vectors (:class:`FeatureEncoder`)."""
from __future__ import annotations

from typing import Union

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmtkit.data.batching import Stream
from nmtkit.data.vocab import PAD
from nmtkit.models.fast_recurrences import MaskedGRU, MaskedLSTM, in_one_dtype

Final = Union[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]


class RNNEncoder(nn.Module):
    """One or more layers of GRU or LSTM, bidirectional or not, over embedded sources.

    Returns the memory ``[B, S, D·H]`` (the directions' states concatenated, zeros at
    padding), the mask ``[B, S]`` (True at real tokens) and each layer's final state with
    the directions concatenated, ``[L, B, D·H]`` (a pair ``(h, c)`` for LSTMs).

    The parameters are those of an ``nn.GRU``/``nn.LSTM`` module, run over packed sequences
    on GPUs (cuDNN). On the CPU the recurrence runs through the hand-written
    :class:`MaskedGRU`/:class:`MaskedLSTM`, both directions of a layer at once: the same
    values (a test pins it), without the packed CPU path's zero-filled input-gradient buffer
    at every time step, whose cost grows with sentence length times the batch's tokens
    (``python bench/encoder.py``: GRUs 1.5x faster on 80-token sentences, LSTMs about even).
    The backward direction reads the padded sequence flipped in time; the mask keeps its
    state at zero until each sentence's last token.
    """

    def __init__(self, input_size: int, hidden_size: int, layers: int = 1, cell: str = "gru",
                 bidirectional: bool = True, dropout: float = 0.0):
        super().__init__()
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(input_size, hidden_size, num_layers=layers, batch_first=True, bidirectional=bidirectional,
                       dropout=dropout if layers > 1 else 0.0)
        self.cell, self.layers = cell, layers
        self.directions = 2 if bidirectional else 1
        self.output_size = self.directions * hidden_size

    def _per_layer(self, final: torch.Tensor) -> torch.Tensor:
        """An ``nn.GRU``/``nn.LSTM`` final state ``[L·D, B, H]`` as this encoder returns it, ``[L, B, D·H]``."""
        layers_dirs, batch, hidden = final.shape
        return final.view(-1, self.directions, batch, hidden).transpose(1, 2).reshape(-1, batch, self.directions * hidden)

    def _layer(self, x: torch.Tensor, masks: torch.Tensor, layer: int) -> list[torch.Tensor]:
        """Layer ``layer`` over time-major ``x [S, B, I]``: its h (and c) ``[S, D, B, H]``, in time order."""
        names = [f"l{layer}", f"l{layer}_reverse"][:self.directions]
        weight = lambda kind, name: getattr(self.rnn, f"{kind}_{name}")
        inputs = []
        for d, name in enumerate(names):
            bias = weight("bias_ih", name) + (weight("bias_hh", name) if self.cell == "lstm" else 0)
            gi = F.linear(x, weight("weight_ih", name), bias)
            inputs.append(gi.flip(0) if d else gi)
        hidden_w = torch.stack([weight("weight_hh", n) for n in names])
        if self.cell == "lstm":
            outs = in_one_dtype(MaskedLSTM, torch.stack(inputs, 1), masks, hidden_w)
        else:
            outs = (in_one_dtype(MaskedGRU, torch.stack(inputs, 1), masks, hidden_w,
                                 torch.stack([weight("bias_hh", n) for n in names])),)
        return [torch.stack([o[:, 0], o[:, 1].flip(0)], 1) if self.directions == 2 else o for o in outs]

    def forward(self, embedded: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Final]:
        mask = torch.arange(embedded.size(1), device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)
        if embedded.device.type == "cpu":
            return self.masked(embedded, mask, lengths)
        return self.packed(embedded, mask, lengths)

    def packed(self, embedded: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """:meth:`forward` through the module over packed sequences."""
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, final = self.rnn(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=embedded.size(1))
        final = tuple(self._per_layer(f) for f in final) if isinstance(final, tuple) else self._per_layer(final)
        return memory, mask, final

    def masked(self, embedded: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """:meth:`forward` through the hand-written recurrences."""
        m = mask.t().unsqueeze(-1).to(embedded.dtype)
        masks = torch.stack([m, m.flip(0)][:self.directions], 1)  # [S, D, B, 1], the backward direction flipped
        batch = torch.arange(embedded.size(0), device=embedded.device)
        last = [lengths - 1, torch.zeros_like(lengths)]  # where each direction ends, in time order
        x, finals = embedded.transpose(0, 1), []
        for layer in range(self.layers):
            if layer:  # nn.GRU/nn.LSTM's dropout between layers
                x = F.dropout(x, self.rnn.dropout, self.training)
            states = self._layer(x, masks, layer)  # h (and c): [S, D, B, H]
            x = states[0].permute(0, 2, 1, 3).flatten(2)  # [S, B, D·H]
            finals.append([torch.cat([s[last[d], d, batch] for d in range(self.directions)], -1) for s in states])
        final = [torch.stack(f) for f in zip(*finals)]  # [L, B, D·H] each
        return x.transpose(0, 1), mask, tuple(final) if self.cell == "lstm" else final[0]


class TextEncoder(RNNEncoder):
    """A text stream's encoder: its token embeddings (dropout on them), then :class:`RNNEncoder`.

    It owns the embeddings (``encoder.embedding``), whose padding row is zero and gets no gradient
    (``padding_idx``; :meth:`Seq2Seq.init_parameters` zeroes every such row again after its uniform
    initialisation). ``dropout`` also applies between stacked layers.
    """

    def __init__(self, vocab_size: int, emb_size: int, hidden_size: int, layers: int = 1, cell: str = "gru",
                 bidirectional: bool = True, dropout: float = 0.0):
        super().__init__(emb_size, hidden_size, layers, cell, bidirectional, dropout)
        self.embedding = nn.Embedding(vocab_size, emb_size, padding_idx=PAD)
        self.embedding_dropout = nn.Dropout(dropout)

    def encode(self, stream: Stream) -> tuple[torch.Tensor, torch.Tensor, Final]:
        """Memory ``[B, S, D·H]``, mask ``[B, S]`` and final states of a stream of token ids (see :class:`RNNEncoder`)."""
        return self(self.embedding_dropout(self.embedding(stream.data)), stream.lengths)


class FeatureEncoder(nn.Module):
    """An image's feature vectors ``[B, L, D]`` projected to ``size`` (after a LayerNorm if ``norm``; through tanh
    if ``bounded``, so that its states lie in (-1, 1) as a GRU encoder's do)."""

    def __init__(self, feature_size: int, size: int, dropout: float, norm: bool = True, bounded: bool = False):
        super().__init__()
        self.norm = nn.LayerNorm(feature_size) if norm else nn.Identity()
        self.project = nn.Linear(feature_size, size)
        self.activation = nn.Tanh() if bounded else nn.Identity()
        self.dropout = nn.Dropout(dropout)
        self.output_size = size

    def encode(self, stream: Stream) -> tuple[torch.Tensor, torch.Tensor, None]:
        """Memory ``[B, L, size]`` (zeros at padding) and mask ``[B, L]``."""
        mask = stream.mask
        states = self.activation(self.project(self.norm(stream.data)))
        return self.dropout(states) * mask.unsqueeze(-1), mask, None
