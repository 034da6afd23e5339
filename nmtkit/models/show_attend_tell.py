"""Show, Attend and Tell (Xu et al. 2015) with soft attention: the captioning model of
target-target-attention.txt §4, with and without target attention: ``show-attend-tell``.

The source is an image's CNN features a_1..a_L (VGG16 conv5_3: L = 196 vectors of 512). The decoder
is :class:`~nmtkit.models.rnn_decoder.RNNDecoder` with an LSTM: at step t it attends from h_{t-1}
over the a_i (α_ti = softmax_i(v^T tanh(W h_{t-1} + U a_i)), z_t = Σ_i α_ti a_i), feeds
[E y_{t-1}; z_t] to the LSTM, and predicts y_t through a deep output from h_t, E y_{t-1} and z_t
with dropout before the output layer; the initial state is tanh(W_init mean_i a_i).
``target_attention`` adds the attention over the decoder's previous states s_1..s_{t-1}
(target-target-attention.txt Eq. 6-11): "Ours" of Table 3.

Training adds the doubly stochastic attention regulariser λ Σ_i (1 - Σ_t α_ti)² (Xu et al. Eq. 14),
which pushes the decoder to look at every part of the image over the caption.
``feature_norm`` normalises each feature vector (LayerNorm) first: features of a randomly initialised
or foreign CNN come at any scale; the paper feeds ImageNet VGG features as they are (``feature_norm: false``).
"""
from __future__ import annotations

from typing import Mapping

import torch
from torch import nn

from nmtkit.config import POSITIVE, PROBABILITY, Option, Range
from nmtkit.data.batching import Batch
from nmtkit.data.streams import FEATURES, CorpusMeta
from nmtkit.data.vocab import PAD, Vocab
from nmtkit.models.registry import option_values, register_model
from nmtkit.models.rnn_decoder import BRIDGES, RNNDecoder, RNNDecoding
from nmtkit.models.rnnsearch import RNN_OPTIONS
from nmtkit.models.seq2seq import ModelOutput
from nmtkit.models.state import DecoderState

IMAGE = "image"

_RNN = {o.name: o for o in RNN_OPTIONS}  # the options of the RNN decoder it shares with rnnsearch, as they are
OPTIONS = [
    Option("emb_size", 256, "word embedding size", allows=POSITIVE),
    Option("dec_size", 512, "decoder LSTM size (the paper: 512)", allows=POSITIVE),
    _RNN["att_size"],
    _RNN["readout_size"],
    Option("dropout", 0.5, "dropout on embeddings and before the output layer", allows=PROBABILITY,
           training_only=True),
    Option("target_attention", False, "attention over the decoder's previous states (target-target-attention.txt "
           "Eq. 6-11; Table 3's 'Ours')"),
    Option("doubly_stochastic", 1.0, "λ of the doubly stochastic attention regulariser λ Σ_i (1 - Σ_t α_ti)² "
           "(0: off)", allows=Range(0, 1e6)),
    Option("feature_norm", True, "normalise each image feature vector (LayerNorm) before attention"),
    Option("max_caption_len", 50, "the longest caption decoding may produce, in tokens", allows=POSITIVE),
    _RNN["param_init"],
]


class ShowAttendTell(RNNDecoding):
    inputs = (IMAGE,)
    bridges = BRIDGES

    def __init__(self, feature_size: int, tgt_vocab: int, emb_size: int = 256, dec_size: int = 512,
                 att_size: int = 0, readout_size: int = 0, dropout: float = 0.5, target_attention: bool = False,
                 doubly_stochastic: float = 1.0, feature_norm: bool = True, max_caption_len: int = 50,
                 param_init: float = 0.1):
        super().__init__()
        self.norm = nn.LayerNorm(feature_size) if feature_norm else nn.Identity()
        self.tgt_emb = nn.Embedding(tgt_vocab, emb_size, padding_idx=PAD)
        self.decoder = RNNDecoder(emb_size, feature_size, dec_size, att_size or dec_size, readout_size or emb_size,
                                  tgt_vocab, dropout, "lstm", target_attention=target_attention)
        self.dropout = nn.Dropout(dropout)
        self.lam, self.max_caption_len = doubly_stochastic, max_caption_len
        self.init_parameters(param_init)
        if feature_norm:  # a LayerNorm starts as the identity map: ones and zeros, not uniform noise
            nn.init.ones_(self.norm.weight)
            nn.init.zeros_(self.norm.bias)

    def encode(self, batch: Batch) -> DecoderState:
        image = batch[IMAGE]
        memory = self.norm(image.data)
        return self.decoder.start(DecoderState({"memory": memory, "mask": image.mask}, shared=("memory", "mask")))

    def forward(self, batch: Batch) -> ModelOutput:
        out = super().forward(batch)
        weights, losses = out.attention, {}
        if self.lam > 0:  # Xu et al. Eq. 14, over the real steps (</s> included) of each caption
            steps = (batch.tgt_out != PAD).unsqueeze(-1).to(weights["source"].dtype)
            coverage = (weights["source"] * steps).sum(1)  # Σ_t α_ti  [B, L]
            real = batch[IMAGE].mask.to(coverage.dtype)
            losses["doubly_stochastic"] = self.lam * (((1 - coverage) ** 2) * real).sum()
        return ModelOutput(out.logits, weights, losses=losses)

    def max_output_len(self, batch: Batch, a: float, b: int) -> torch.Tensor:
        """``max_caption_len`` for every image (an image has no length to scale a and b by)."""
        return torch.full((batch.size,), self.max_caption_len, dtype=torch.long, device=batch.device)


def captioner_uses(config: Mapping, meta: CorpusMeta) -> list[tuple[str, bool, str]]:
    """Validation's length limit a·|x| + b is a translation's: a caption ends at ``max_caption_len``."""
    return [(name, False, "a translation model (a caption ends at --max-caption-len)")
            for name in ("max_len_a", "max_len_b")]


@register_model("show-attend-tell", OPTIONS, "image captioning (Xu et al. 2015; target-target-attention.txt §4): "
                "LSTM with soft attention over CNN features, optional target attention", captioner_uses)
def build(config: dict, meta: CorpusMeta, vocabs: Mapping[str, Vocab]) -> ShowAttendTell:
    meta.require("show-attend-tell", image=FEATURES)
    return ShowAttendTell(meta.streams[IMAGE].size, meta.target.size, **option_values(config, OPTIONS))
