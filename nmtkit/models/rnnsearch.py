"""RNNSearch (Bahdanau, Cho and Bengio, 2015): the baseline of every paper in nmtkit.

BiGRU encoder; GRU decoder whose attention reads the previous state s_{i-1} *before* the
recurrent step, the context c_i entering the GRU (target-target-attention.txt Eq. 1-5):

    c_i = sum_j alpha_ij h_j,  alpha_ij = softmax_j(v^T tanh(W s_{i-1} + U h_j))
    s_i = GRU(s_{i-1}, [E y_{i-1}; c_i])
    t_i = maxout(U_o s_i + V_o E y_{i-1} + C_o c_i)    (deep output, Eq. 3)
    p(y_i | y_<i, x) = softmax(W_o t_i)

The decoder is :class:`~nmtkit.models.rnn_decoder.RNNDecoder`, which the target-attention
models extend; ``decoder_cell`` swaps the GRU for an LSTM or a conditional GRU.
"""
from __future__ import annotations

from typing import Mapping

from torch import nn

from nmtkit.config import COUNT, Option
from nmtkit.data.batching import Batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import PAD, Vocab
from nmtkit.models.cells import CELLS
from nmtkit.models.encoder import TextEncoder
from nmtkit.models.registry import option_values, register_model
from nmtkit.models.rnn_decoder import BRIDGES, RNNDecoder, RNNDecoding
from nmtkit.models.rnn_options import check_tied_readout, rnn_options
from nmtkit.models.state import DecoderState

RNN_OPTIONS = rnn_options("GRU", "RNN", "--readout-size equal to --emb-size") + [
    Option("att_size", 0, "attention MLP hidden size (0: the decoder size)", allows=COUNT),
    Option("readout_size", 0, "deep-output (maxout) size (0: the embedding size)", allows=COUNT),
    Option("decoder_cell", "gru", "decoder cell: gru (the papers' NMT models), lstm, or cgru (conditional GRU: "
                                  "attention between two GRU transitions)", choices=tuple(CELLS)),
]


class RNNSearch(RNNDecoding):
    bridges = BRIDGES

    def __init__(self, src_vocab: int, tgt_vocab: int, emb_size: int = 256, enc_size: int = 256,
                 dec_size: int = 512, att_size: int = 0, readout_size: int = 0, dropout: float = 0.2,
                 tie_embeddings: bool = False, param_init: float = 0.1, decoder_cell: str = "gru",
                 target_attention: bool = False, reverse: bool = False):
        super().__init__()
        att_size = att_size or dec_size
        readout_size = readout_size or emb_size
        check_tied_readout(tie_embeddings, readout_size, emb_size)
        self.encoder = TextEncoder(src_vocab, emb_size, enc_size, dropout=dropout)
        self.tgt_emb = nn.Embedding(tgt_vocab, emb_size, padding_idx=PAD)
        sizes = (emb_size, self.encoder.output_size, dec_size, att_size, readout_size, tgt_vocab, dropout, decoder_cell)
        self.decoder = RNNDecoder(*sizes, target_attention=target_attention, extra_size=dec_size if reverse else 0)
        self.reverse = RNNDecoder(*sizes, target_attention=True, prefix="reverse_") if reverse else None
        self.dropout = nn.Dropout(dropout)
        decoders = [d for d in (self.decoder, self.reverse) if d is not None]
        self.init_parameters(param_init, [(d.readout.output, self.tgt_emb) for d in decoders] if tie_embeddings else ())

    def source(self, batch: Batch) -> DecoderState:
        """The encoder's part of the state: ``memory`` h_j ``[B, S, 2H]`` and ``mask`` ``[B, S]``."""
        memory, mask, _ = self.encoder.encode(batch["src"])
        return DecoderState({"memory": memory, "mask": mask}, shared=("memory", "mask"))

    def encode(self, batch: Batch) -> DecoderState:
        return self.decoder.start(self.source(batch))



@register_model("rnnsearch", RNN_OPTIONS, "BiGRU encoder, GRU decoder with MLP attention on s_{i-1}, deep output")
def build_rnnsearch(config: dict, meta: CorpusMeta, vocabs: Mapping[str, Vocab]) -> RNNSearch:
    return RNNSearch(*meta.translation_sizes("rnnsearch"), **option_values(config, RNN_OPTIONS))
