"""RNNSearch (Bahdanau, Cho and Bengio, 2015): the baseline of every paper in nmtkit.

BiGRU encoder; GRU decoder whose attention reads the previous state s_{i-1} *before* the
recurrent step, the context c_i entering the GRU (target-target-attention.txt Eq. 1-5):

    c_i = sum_j alpha_ij h_j,  alpha_ij = softmax_j(v^T tanh(W s_{i-1} + U h_j))
    s_i = GRU(s_{i-1}, [E y_{i-1}; c_i])
    t_i = maxout(U_o s_i + V_o E y_{i-1} + C_o c_i)    (deep output, Eq. 3)
    p(y_i | y_<i, x) = softmax(W_o t_i)

The GRU uses the cuDNN/PyTorch gate layout (reset gate applied after the recurrent
product), which lets W s_{i-1}, the three recurrent gate products and nothing else share
one matrix product per step.
"""
from __future__ import annotations

import torch
from torch import nn

from nmtkit.config import Option
from nmtkit.data.batching import Batch
from nmtkit.data.vocab import PAD
from nmtkit.models.activation import tanh
from nmtkit.models.attention import MLPAttention
from nmtkit.models.encoder import RNNEncoder
from nmtkit.models.fused import attentive_gru, bigru
from nmtkit.models.registry import register_model
from nmtkit.models.seq2seq import Attention, Seq2Seq
from nmtkit.models.state import DecoderState

RNN_OPTIONS = [
    Option("emb_size", 256, "word embedding size (source and target)"),
    Option("enc_size", 256, "encoder RNN size per direction (GRU for rnnsearch, LSTM for luong)"),
    Option("dec_size", 512, "decoder RNN size"),
    Option("att_size", 0, "attention MLP hidden size (0: the decoder size)"),
    Option("readout_size", 0, "deep-output (maxout) size (0: the embedding size)"),
    Option("dropout", 0.2, "dropout on embeddings and the deep output"),
    Option("tie_embeddings", False, "share the target embeddings with the output layer (needs readout_size == emb_size)"),
    Option("param_init", 0.1, "initialise parameters uniformly in [-x, x] (0: PyTorch defaults)"),
]


def gru_update(gi: torch.Tensor, gh: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """One GRU update from input and hidden gate pre-activations ``[B, 3H]`` (r, z, n order)."""
    i_r, i_z, i_n = gi.chunk(3, dim=-1)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = tanh(i_n + r * h_n)
    return n + z * (h - n)  # (1 - z) * n + z * h


class RNNSearch(Seq2Seq):
    def __init__(self, src_vocab: int, tgt_vocab: int, emb_size: int = 256, enc_size: int = 256,
                 dec_size: int = 512, att_size: int = 0, readout_size: int = 0, dropout: float = 0.2,
                 tie_embeddings: bool = False, param_init: float = 0.1):
        super().__init__()
        att_size = att_size or dec_size
        readout_size = readout_size or emb_size
        if tie_embeddings and readout_size != emb_size:
            raise ValueError("tie_embeddings needs readout_size == emb_size")
        self.dec_size, self.emb_size, self.att_size = dec_size, emb_size, att_size
        self.src_emb = nn.Embedding(src_vocab, emb_size, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(tgt_vocab, emb_size, padding_idx=PAD)
        self.encoder = RNNEncoder(emb_size, enc_size)
        ctx = self.encoder.output_size
        self.init_state = nn.Linear(ctx, dec_size)
        self.attention = MLPAttention(dec_size, ctx, att_size, project_query=False)
        # E y_{i-1} and c_i -> the three GRU gates (two matrices: the first runs once over all steps)
        self.emb_gates = nn.Linear(emb_size, 3 * dec_size)
        self.ctx_gates = nn.Linear(ctx, 3 * dec_size, bias=False)
        # s_{i-1} -> the three recurrent gate products and the attention query W s_{i-1}
        self.hidden_proj = nn.Linear(dec_size, 3 * dec_size + att_size)
        self.readout = nn.Linear(dec_size + emb_size + ctx, 2 * readout_size)
        self.output = nn.Linear(readout_size, tgt_vocab)
        self.dropout = nn.Dropout(dropout)
        self.init_parameters(param_init, tie_embeddings)

    # -- encoder ---------------------------------------------------------------------
    def encode(self, src: torch.Tensor, src_lens: torch.Tensor) -> DecoderState:
        mask = torch.arange(src.size(1), device=src.device) < src_lens.unsqueeze(1)
        memory = bigru(self.dropout(self.src_emb(src)), mask, self.encoder.rnn)  # = self.encoder(...), faster
        mean = memory.sum(1) / src_lens.unsqueeze(1).to(memory.dtype)
        s0 = torch.tanh(self.init_state(mean))  # s_0 = tanh(W_s mean_j h_j)
        return DecoderState({"memory": memory, "keys": self.attention.keys(memory), "mask": mask, "hidden": s0},
                            static=("memory", "keys", "mask"))

    # -- decoder ---------------------------------------------------------------------
    def _step(self, gi_emb: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Attend from s_{i-1}, then update the GRU: returns s_i, c_i and alpha_i."""
        s = state["hidden"]
        gh, query = self.hidden_proj(s).split([3 * self.dec_size, self.att_size], dim=-1)
        ctx, alpha = self.attention(query, state["keys"], state["memory"], state["mask"])
        gi = gi_emb + self.ctx_gates(ctx)
        return gru_update(gi, gh, s), ctx, alpha

    def _logits(self, s: torch.Tensor, emb: torch.Tensor, ctx: torch.Tensor) -> torch.Tensor:
        """Deep output with maxout over pairs of units."""
        t = self.readout(torch.cat([s, emb, ctx], dim=-1))
        t = t.view(*t.shape[:-1], -1, 2).amax(-1)
        return self.output(self.dropout(t))

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, Attention]:
        emb = self.dropout(self.tgt_emb(prev))
        s, ctx, alpha = self._step(self.emb_gates(emb), state)
        log_probs = torch.log_softmax(self._logits(s, emb, ctx).float(), dim=-1)
        return log_probs, state.replace(hidden=s), {"source": alpha}

    def forward(self, batch: Batch) -> tuple[torch.Tensor, Attention]:
        state = self.encode(batch.src, batch.src_lens)
        emb = self.dropout(self.tgt_emb(batch.tgt_in))
        gi_emb = self.emb_gates(emb.transpose(0, 1))  # embedding part of the gates, all steps at once
        states, contexts, alphas = attentive_gru(
            gi_emb, state["hidden"], state["keys"], state["memory"], state["mask"], self.hidden_proj.weight,
            self.hidden_proj.bias, self.ctx_gates.weight, self.attention.v.weight)  # _step for every i
        logits = self._logits(states.transpose(0, 1), emb, contexts.transpose(0, 1))
        return logits, {"source": alphas}


@register_model("rnnsearch", RNN_OPTIONS, "BiGRU encoder, GRU decoder with MLP attention on s_{i-1}, deep output")
def build_rnnsearch(config: dict, src_vocab: int, tgt_vocab: int) -> RNNSearch:
    return RNNSearch(src_vocab, tgt_vocab, **{o.name: config[o.name] for o in RNN_OPTIONS})
