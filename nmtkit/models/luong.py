"""Luong, Pham and Manning (2015): stacked LSTMs with global or local attention (global-local-attention.md).

    h_t = LSTM_stack(h_{t-1}, [E y_{t-1}; h̃_{t-1}])     (input feeding, §3.3; E y_{t-1} alone without)
    c_t, a_t = attention(h_t, h̄)                         (global Eq. 7-8, local-m / local-p Eq. 9-10)
    h̃_t = tanh(W_c [c_t; h_t])                           (Eq. 5)
    p(y_t | y_<t, x) = softmax(W_s h̃_t)                   (Eq. 6)

Attention reads the *new* top state h_t (after the recurrent step), unlike RNNSearch. Without
input feeding nothing recurrent depends on attention, so teacher forcing runs the LSTM over
the whole sequence at once and attends for all steps in one batched product.
"""
from __future__ import annotations

from typing import Mapping, Optional

import torch
from torch import nn

from nmtkit.config import POSITIVE, Option
from nmtkit.data.batching import Batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import PAD, Vocab
from nmtkit.models.activation import tanh
from nmtkit.models.encoder import TextEncoder
from nmtkit.models.luong_attention import KINDS, SCORES, LuongAttention
from nmtkit.models.registry import option_values, register_model
from nmtkit.models.rnn_options import rnn_options
from nmtkit.models.seq2seq import AttentionWeights, ModelOutput, Seq2Seq
from nmtkit.models.state import DecoderState

LUONG_OPTIONS = rnn_options("LSTM", "LSTM", "--emb-size equal to --dec-size") + [
    Option("layers", 2, "LSTM layers of the encoder and of the decoder (luong)", allows=POSITIVE),
    Option("encoder_type", "brnn", "luong encoder: rnn (unidirectional, as in the paper) or brnn (bidirectional)",
           choices=("rnn", "brnn")),
    Option("attention", "global", "luong attention: global, local-m or local-p", choices=KINDS),
    Option("global_attention", "general", "luong score function (Eq. 7-8): dot, general, concat or location",
           choices=SCORES),
    Option("attention_window", 10, "local attention half-width D; sigma = D/2 (luong)", allows=POSITIVE),
    Option("location_max_len", 100, "source positions covered by location-based attention (luong)",
           allows=POSITIVE),
    Option("input_feed", True, "feed the attentional vector h~_{t-1} into the next decoder input (luong)"),
]


class Luong(Seq2Seq):
    limit_option = "--location-max-len"
    merges_states = True  # (each row counts its own steps for local-m/-p)

    def __init__(self, src_vocab: int, tgt_vocab: int, emb_size: int = 256, enc_size: int = 256,
                 dec_size: int = 512, layers: int = 2, encoder_type: str = "brnn", attention: str = "global",
                 global_attention: str = "general", attention_window: int = 10, location_max_len: int = 100,
                 input_feed: bool = True, dropout: float = 0.2, tie_embeddings: bool = False,
                 param_init: float = 0.1):
        super().__init__()
        if tie_embeddings and emb_size != dec_size:
            raise ValueError(f"--tie-embeddings needs --emb-size ({emb_size}) equal to --dec-size ({dec_size}): W_s maps "
                             "h~_t, of --dec-size, to the words")
        self.input_feed, self.dec_size, self.layers = input_feed, dec_size, layers
        self.encoder = TextEncoder(src_vocab, emb_size, enc_size, layers, "lstm", encoder_type == "brnn", dropout)
        self.tgt_emb = nn.Embedding(tgt_vocab, emb_size, padding_idx=PAD)
        memory = self.encoder.output_size
        self.bridge_h = nn.Linear(memory, dec_size)  # decoder (h, c) of each layer from the encoder's final ones
        self.bridge_c = nn.Linear(memory, dec_size)
        self.decoder = nn.LSTM(emb_size + (dec_size if input_feed else 0), dec_size, layers, batch_first=True,
                               dropout=dropout if layers > 1 else 0.0)
        self.attention = LuongAttention(dec_size, memory, global_attention, attention, attention_window,
                                        max_positions=location_max_len)
        self.combine = nn.Linear(memory + dec_size, dec_size, bias=False)  # W_c, Eq. 5
        self.output = nn.Linear(dec_size, tgt_vocab)  # W_s, Eq. 6
        self.dropout = nn.Dropout(dropout)
        self.init_parameters(param_init, [(self.output, self.tgt_emb)] if tie_embeddings else ())

    def input_limit(self) -> Optional[int]:
        """Location-based scores (Eq. 8) cover ``location_max_len`` source positions, its ``</s>`` included."""
        return self.attention.w_loc.out_features - 1 if self.attention.score == "location" else None

    def encode(self, batch: Batch) -> DecoderState:
        memory, mask, (h, c) = self.encoder.encode(batch["src"])  # h, c: [L, B, M]
        size, device = batch.size, memory.device
        return DecoderState({
            "memory": memory, "keys": self.attention.keys(memory), "mask": mask,
            "h": torch.tanh(self.bridge_h(h)).transpose(0, 1), "c": self.bridge_c(c).transpose(0, 1),
            "feed": memory.new_zeros(size, self.dec_size), "step": torch.zeros(size, dtype=torch.long, device=device),
        }, shared=("memory", "keys", "mask"))

    def _attend(self, top: torch.Tensor, state: DecoderState, steps: torch.Tensor):
        """Eq. 5 on top of the attention: h̃_t ``[B, T, H]`` and the weights ``[B, T, S]``."""
        ctx, weights = self.attention(top, state.per_sentence("keys"), state.per_sentence("memory"),
                                      state.per_sentence("mask"), steps)
        return tanh(self.combine(torch.cat([ctx, top], dim=-1))), weights

    def _recur(self, inputs: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState]:
        hc = (state["h"].transpose(0, 1).contiguous(), state["c"].transpose(0, 1).contiguous())
        if inputs.device.type == "cpu" and torch.is_autocast_enabled("cpu"):  # oneDNN has no bfloat16 LSTM
            with torch.autocast("cpu", enabled=False):
                top, (h, c) = self.decoder(inputs.float(), tuple(x.float() for x in hc))
        else:
            top, (h, c) = self.decoder(inputs, hc)
        return top, state.replace(h=h.transpose(0, 1), c=c.transpose(0, 1))

    def _step(self, emb: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, torch.Tensor, DecoderState]:
        """One decoder step from embeddings ``[B, E]``: h̃_t ``[B, H]``, a_t ``[B, S]``, new state."""
        x = torch.cat([emb, state["feed"]], dim=-1) if self.input_feed else emb
        top, state = self._recur(self.dropout(x).unsqueeze(1), state)
        h_tilde, weights = self._attend(top, state, state["step"].unsqueeze(1))
        h_tilde = h_tilde.squeeze(1)
        return h_tilde, weights.squeeze(1), state.replace(feed=h_tilde, step=state["step"] + 1)

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        h_tilde, weights, state = self._step(self.tgt_emb(prev), state)
        log_probs = torch.log_softmax(self.output(self.dropout(h_tilde)).float(), dim=-1)
        return log_probs, state, {"source": weights}

    def forward(self, batch: Batch) -> ModelOutput:
        state = self.encode(batch)
        emb = self.tgt_emb(batch.tgt_in)
        if self.input_feed:  # h̃_{t-1} enters step t: step by step
            outputs, weights = [], []
            for t in range(emb.size(1)):
                h_tilde, w, state = self._step(emb[:, t], state)
                outputs.append(h_tilde)
                weights.append(w)
            h_tilde, weights = torch.stack(outputs, 1), torch.stack(weights, 1)
        else:  # the whole sequence at once
            top, state = self._recur(self.dropout(emb), state)
            steps = torch.arange(emb.size(1), device=emb.device).unsqueeze(0)
            h_tilde, weights = self._attend(top, state, steps)
        return ModelOutput(self.output(self.dropout(h_tilde)), {"source": weights})


def luong_uses(config: Mapping, meta: CorpusMeta) -> list[tuple[str, bool, str]]:
    """The window is local attention's, the positions covered the location score's."""
    return [("attention_window", config["attention"] != "global", "--attention local-m or local-p"),
            ("location_max_len", config["global_attention"] == "location", "--global-attention location")]


@register_model("luong", LUONG_OPTIONS, "stacked LSTMs, global (dot/general/concat/location) or local-m/local-p "
                                        "attention, input feeding", luong_uses)
def build_luong(config: dict, meta: CorpusMeta, vocabs: Mapping[str, Vocab]) -> Luong:
    return Luong(*meta.translation_sizes("luong"), **option_values(config, LUONG_OPTIONS))
