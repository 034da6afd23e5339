"""The attentive RNN decoder of RNNSearch, with the target attention of the target-attention papers.

One step j, with s_{j-1} the previous state (target-target-attention.txt Eq. 1-11):

    c^e_j = Σ_i α_ij h_i,    α_ij = softmax_i(v^T tanh(W s_{j-1} + U h_i))          (Eq. 4-5)
    c^d_j = Σ_{t<j} β_tj s_t, β_tj = softmax_t(v_d^T tanh(W_d s_{j-1} + U_d s_t))   (Eq. 6-7; 0 for j = 1)
    s_j   = cell(s_{j-1}, [E y_{j-1}; c^e_j; c^d_j; R̃])                            (Eq. 8, 10)
    t_j   = maxout(U_o s_j + V_o E y_{j-1} + C_o c^e_j + W^d c^d_j + W^r R̃)         (Eq. 9, 11)
    p(y_j | y_<j, x) = softmax(W_o t_j)

c^d_j (target attention, also the forward target attention F_{j-1} of
bidirectional-target-attention.txt Eq. 10-13) is optional, and so is R̃, a fixed vector per
sentence: the mean state of the reverse decoder (bidirectional-target-attention.txt Eq. 19, 21-22).
The cell is a GRU (cuDNN gate layout, reset gate after the recurrent product) or an LSTM.

The growing target memory s_1..s_{j-1} and its keys U_d s_t live in the decoding state, one
row appended per step, so a step scores the history without recomputing it; beam search
reorders them with every other state tensor.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from nmtkit.models.activation import tanh
from nmtkit.models.attention import MLPAttention
from nmtkit.models.fused import attentive_gru
from nmtkit.models.seq2seq import Attention
from nmtkit.models.state import DecoderState

CELLS = ("gru", "lstm")
# the maps through which target attention (Eq. 10-11) and R̃ (Eq. 19) enter the gates and the output
BRIDGES = ("target_gates", "target_readout", "extra_gates", "extra_readout")


def gru_update(gi: torch.Tensor, gh: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """One GRU update from input and hidden gate pre-activations ``[B, 3H]`` (r, z, n order)."""
    i_r, i_z, i_n = gi.chunk(3, dim=-1)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = tanh(i_n + r * h_n)
    return n + z * (h - n)  # (1 - z) * n + z * h, Eq. 10


def lstm_update(gates: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM update from the summed gate pre-activations ``[B, 4H]`` (i, f, g, o order): (h, c)."""
    i, f, g, o = gates.chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * tanh(g)
    return torch.sigmoid(o) * tanh(c), c


class RNNDecoder(nn.Module):
    """An attentive GRU or LSTM decoder whose state tensors are named with ``prefix`` in the
    :class:`DecoderState`, so that two decoders (forward and reverse) can share one state.

    The state it reads from the model: ``memory [B, S, C]`` (encoder states h_i) and ``mask
    [B, S]``. It adds ``keys`` (U h_i), ``hidden`` (s_j), ``cell`` (LSTM), ``tmemory`` /
    ``tkeys`` (target attention) and ``extra_gates`` / ``extra_out`` (R̃'s terms).
    """

    def __init__(self, emb_size: int, ctx_size: int, dec_size: int, att_size: int, readout_size: int,
                 tgt_vocab: int, dropout: float, cell: str = "gru", target_attention: bool = False,
                 extra_size: int = 0, prefix: str = ""):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"unknown decoder cell {cell!r}")
        gates = (3 if cell == "gru" else 4) * dec_size
        self.cell, self.prefix, self.gates, self.att_size = cell, prefix, gates, att_size
        self.init_state = nn.Linear(ctx_size, dec_size)
        self.attention = MLPAttention(dec_size, ctx_size, att_size, project_query=False)
        # E y_{j-1} and c^e_j -> the gates (two matrices: the first runs once over all steps)
        self.emb_gates = nn.Linear(emb_size, gates)
        self.ctx_gates = nn.Linear(ctx_size, gates, bias=False)
        # s_{j-1} -> the recurrent gate products and the attention query W s_{j-1}
        self.hidden_proj = nn.Linear(dec_size, gates + att_size)
        self.readout = nn.Linear(dec_size + emb_size + ctx_size, 2 * readout_size)
        self.output = nn.Linear(readout_size, tgt_vocab)
        self.dropout = nn.Dropout(dropout)
        self.target_attention = MLPAttention(dec_size, dec_size, att_size) if target_attention else None
        if target_attention:
            self.target_gates = nn.Linear(dec_size, gates, bias=False)  # C^d_r, C^d_z, C^d of Eq. 10
            self.target_readout = nn.Linear(dec_size, 2 * readout_size, bias=False)  # W^d of Eq. 11
        if extra_size:
            self.extra_gates = nn.Linear(extra_size, gates, bias=False)
            self.extra_readout = nn.Linear(extra_size, 2 * readout_size, bias=False)
        self.extra_size = extra_size

    def _name(self, name: str) -> str:
        return self.prefix + name

    # -- state -------------------------------------------------------------------------
    def start(self, state: DecoderState, src_lens: torch.Tensor, extra: Optional[torch.Tensor] = None) -> DecoderState:
        """Add this decoder's initial entries to a state holding ``memory`` and ``mask``.

        s_0 = tanh(W_s mean_i h_i); ``extra [B, X]`` is R̃ when the decoder takes one.
        """
        memory = state["memory"]
        mean = memory.sum(1) / src_lens.unsqueeze(1).to(memory.dtype)
        s0 = torch.tanh(self.init_state(mean))
        entries = {"keys": self.attention.keys(memory), "hidden": s0}
        static = ["keys"]
        if self.cell == "lstm":
            entries["cell"] = torch.zeros_like(s0)
        if self.target_attention is not None:
            entries["tmemory"] = s0.new_zeros(s0.size(0), 0, s0.size(1))
            entries["tkeys"] = s0.new_zeros(s0.size(0), 0, self.att_size)
        if self.extra_size:
            if extra is None:
                raise ValueError("this decoder takes an extra context vector (R̃)")
            entries["extra_gates"], entries["extra_out"] = self.extra_gates(extra), self.extra_readout(extra)
            static += ["extra_gates", "extra_out"]
        return DecoderState({**state.tensors, **{self._name(k): v for k, v in entries.items()}},
                            state.static | {self._name(k) for k in static})

    def _get(self, state: DecoderState, name: str) -> Optional[torch.Tensor]:
        name = self._name(name)
        return state[name] if name in state else None

    # -- one step ----------------------------------------------------------------------
    def _recur(self, gi: torch.Tensor, state: DecoderState):
        """Attend from s_{j-1} and update the cell; ``gi`` holds the gate terms of E y_{j-1} (and R̃).

        Returns s_j, c^e_j, c^d_j (None without target attention), the attention weights and
        the state entries to replace.
        """
        s = self._get(state, "hidden")
        gh, query = self.hidden_proj(s).split([self.gates, self.att_size], dim=-1)
        ctx, alpha = self.attention(query, self._get(state, "keys"), state["memory"], state["mask"])
        gi = gi + self.ctx_gates(ctx)
        weights = {"source": alpha}
        target_ctx = None
        if self.target_attention is not None:  # Eq. 6-7 over s_1..s_{j-1}
            tmemory = self._get(state, "tmemory")
            target_ctx, weights["target"] = self.target_attention(s, self._get(state, "tkeys"), tmemory)
            gi = gi + self.target_gates(target_ctx)
        new = {}
        if self.cell == "gru":
            s_new = gru_update(gi, gh, s)
        else:
            s_new, new[self._name("cell")] = lstm_update(gi + gh, self._get(state, "cell"))
        new[self._name("hidden")] = s_new
        if self.target_attention is not None:  # M^{j+1}_tgt = M^j_tgt ∪ {s_j}
            new[self._name("tmemory")] = torch.cat([tmemory, s_new.unsqueeze(1)], 1)
            new[self._name("tkeys")] = torch.cat([self._get(state, "tkeys"),
                                                  self.target_attention.keys(s_new).unsqueeze(1)], 1)
        return s_new, ctx, target_ctx, weights, new

    def logits(self, s: torch.Tensor, emb: torch.Tensor, ctx: torch.Tensor, target_ctx: Optional[torch.Tensor],
               state: DecoderState) -> torch.Tensor:
        """Deep output with maxout over pairs of units (Eq. 11), for one step ``[B, .]`` or all ``[B, T, .]``."""
        t = self.readout(torch.cat([s, emb, ctx], dim=-1))
        if target_ctx is not None:
            t = t + self.target_readout(target_ctx)
        extra = self._get(state, "extra_out")
        if extra is not None:
            t = t + (extra.unsqueeze(1) if t.dim() == 3 else extra)
        t = t.view(*t.shape[:-1], -1, 2).amax(-1)
        return self.output(self.dropout(t))

    def _input_gates(self, emb: torch.Tensor, state: DecoderState) -> torch.Tensor:
        gi = self.emb_gates(emb)
        extra = self._get(state, "extra_gates")
        if extra is not None:
            gi = gi + (extra.unsqueeze(1) if gi.dim() == 3 else extra)
        return gi

    def step(self, emb: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, Attention]:
        """Logits ``[B, V]`` of step j from E y_{j-1} ``[B, E]``, the new state and the weights."""
        s, ctx, target_ctx, weights, new = self._recur(self._input_gates(emb, state), state)
        state = state.replace(**new)
        return self.logits(s, emb, ctx, target_ctx, state), state, weights

    # -- teacher forcing -----------------------------------------------------------------
    def forward(self, emb: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, torch.Tensor, Attention]:
        """Logits ``[B, T, V]``, states s_1..s_T ``[B, T, H]`` and weights for embedded inputs ``[B, T, E]``.

        ``target`` weights come as ``[B, T, T]``, row j holding β_tj for t < j and zeros elsewhere.
        """
        gi = self._input_gates(emb, state)
        if self.cell == "gru":  # the hand-written recurrence: the same maths as _recur, faster
            h, ta = self.hidden_proj, self.target_attention
            target = None if ta is None else (ta.query.weight, ta.key.weight, ta.key.bias, ta.v.weight,
                                              self.target_gates.weight)
            out = attentive_gru(gi.transpose(0, 1), self._get(state, "hidden"), self._get(state, "keys"),
                                state["memory"], state["mask"], h.weight, h.bias, self.ctx_gates.weight,
                                self.attention.v.weight, target)
            states, contexts = out[0].transpose(0, 1), out[1].transpose(0, 1)
            weights = {"source": out[2]}
            target_ctx = None
            if ta is not None:
                target_ctx, weights["target"] = out[3].transpose(0, 1), out[4]
            return self.logits(states, emb, contexts, target_ctx, state), states, weights
        steps = emb.size(1)
        states, contexts, target_contexts, weights = [], [], [], {}
        for j in range(steps):
            s, ctx, target_ctx, w, new = self._recur(gi[:, j], state)
            state = state.replace(**new)
            states.append(s)
            contexts.append(ctx)
            target_contexts.append(target_ctx)
            for name, value in w.items():
                weights.setdefault(name, []).append(value)
        states, contexts = torch.stack(states, 1), torch.stack(contexts, 1)
        target_ctx = torch.stack(target_contexts, 1) if self.target_attention is not None else None
        attention = {"source": torch.stack(weights["source"], 1)}
        if "target" in weights:
            attention["target"] = torch.stack(
                [nn.functional.pad(b, (0, steps - b.size(1))) for b in weights["target"]], 1)
        return self.logits(states, emb, contexts, target_ctx, state), states, attention
