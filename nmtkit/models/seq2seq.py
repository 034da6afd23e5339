"""The interface every model implements, which the trainer and the search rely on."""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from nmtkit.data.batching import Batch
from nmtkit.data.vocab import PAD
from nmtkit.models.state import DecoderState

Attention = dict  # name ("source", "target", "encoders", ...) -> weights [B, ...]
AUXILIARY = "auxiliary"  # forward()'s extra key: [(logits, gold)] of decoders trained jointly


class Seq2Seq(nn.Module):
    """A sequence-to-sequence model.

    - ``forward(batch)``: teacher-forced logits ``[B, T, V]`` for ``batch.tgt_in`` and the
      attention weights of every step (name -> ``[B, T, ...]``). A model with an auxiliary
      decoder trained jointly (the reverse decoder of bitatt-rnn) adds ``AUXILIARY``: a list of
      ``(logits, gold)`` pairs whose cross-entropy the trainer adds to the loss.
    - ``encode(src, src_lens)``: the initial :class:`DecoderState` for a batch of sources.
    - ``decode_step(prev, state)``: log-probabilities ``[B, V]`` of the next token given the
      previous tokens ``[B]``, the new state, and this step's attention (name -> ``[B, ...]``).
    - ``score_logits(batch)``: teacher-forced logits of the target given the source alone, as
      decoding conditions them; perplexity (Eq. 13) is computed from these. The same as
      ``forward`` unless training conditions on the reference otherwise (R̃ of rtatt/bitatt-rnn).

    A test checks that ``forward`` equals step-by-step ``decode_step`` for every model.
    """

    #: Names of the modules through which a component's output enters the rest of the network
    #: (target attention into the decoder's gates, say). A warm start zeroes the new ones, so that
    #: the model starts out computing what its checkpoint computed and learns to use the component.
    bridges: tuple[str, ...] = ()

    def init_parameters(self, param_init: float, tie_embeddings: bool, outputs: Sequence[nn.Linear] = ()) -> None:
        """Uniform [-param_init, param_init] init (0: keep PyTorch's), zero padding embeddings, tie outputs.

        Expects ``src_emb`` and ``tgt_emb`` modules; ``outputs`` are the output layers to tie to
        the target embeddings (default: the ``output`` module).
        """
        if param_init > 0:
            for p in self.parameters():
                nn.init.uniform_(p, -param_init, param_init)
        with torch.no_grad():
            self.src_emb.weight[PAD].zero_()
            self.tgt_emb.weight[PAD].zero_()
        if tie_embeddings:
            for output in outputs or [self.output]:
                output.weight = self.tgt_emb.weight

    def forward(self, batch: Batch) -> tuple[torch.Tensor, Attention]:
        raise NotImplementedError

    def score_logits(self, batch: Batch) -> torch.Tensor:
        """Teacher-forced logits ``[B, T, V]`` of ``batch.tgt_out`` given the source, conditioned as in decoding."""
        return self(batch)[0]

    def encode(self, src: torch.Tensor, src_lens: torch.Tensor) -> DecoderState:
        raise NotImplementedError

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, Attention]:
        raise NotImplementedError
