"""The attentive RNN decoder of RNNSearch, with the target attention of the target-attention papers.

One step j, with s_{j-1} the previous state (target-target-attention.txt Eq. 1-11):

    c^e_j = Σ_i α_ij h_i,    α_ij = softmax_i(v^T tanh(W s_{j-1} + U h_i))          (Eq. 4-5)
    c^d_j = Σ_{t<j} β_tj s_t, β_tj = softmax_t(v_d^T tanh(W_d s_{j-1} + U_d s_t))   (Eq. 6-7; 0 for j = 1)
    s_j   = cell(s_{j-1}, [E y_{j-1}; c^e_j; c^d_j; R̃])                            (Eq. 8, 10)
    t_j   = maxout(U_o s_j + V_o E y_{j-1} + C_o c^e_j + W^d c^d_j + W^r R̃)         (Eq. 9, 11)
    p(y_j | y_<j, x) = softmax(W_o t_j)

The decoder is assembled from parts: the source attention and the optional target attention
(both :mod:`~nmtkit.models.attention`'s protocol), a cell (:mod:`~nmtkit.models.cells`: GRU,
LSTM or conditional GRU, which decides where the attention reads) and the deep output
(:mod:`~nmtkit.models.readout`). c^d_j (also the forward target attention F_{j-1} of
bidirectional-target-attention.txt Eq. 10-13) is optional, and so is R̃, a fixed vector per
sentence: the mean state of the reverse decoder (bidirectional-target-attention.txt Eq. 19, 21-22).

Teacher forcing runs the hand-written recurrence of :mod:`~nmtkit.models.fast_recurrences`
for the configurations it covers, the steps' own autograd otherwise.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from nmtkit.models.attention import MLPAttention, TargetAttention
from nmtkit.models.cells import CELLS
from nmtkit.models.fast_recurrences import attentive_gru, covers_decoder
from nmtkit.models.readout import DeepOutput
from nmtkit.models.seq2seq import AttentionWeights, ModelOutput, Seq2Seq
from nmtkit.models.state import DecoderState, target_mask

# the maps through which target attention (Eq. 10-11) and R̃ (Eq. 19) enter the gates and the output
BRIDGES = ("cell.contexts.target", "readout.extras.target", "cell.inputs.extra", "readout.extras.extra")


class RNNDecoder(nn.Module):
    """An attentive GRU, LSTM or conditional-GRU decoder whose state tensors are named with ``prefix``
    in the :class:`DecoderState`, so that two decoders (forward and reverse) can share one state.

    The state it reads from the model: ``memory [B, S, C]`` (encoder states h_i) and ``mask
    [B, S]``. It adds ``keys`` (U h_i), the cell's entries (``hidden`` s_j, ``cell``), ``tmemory``
    / ``tkeys`` (target attention) and ``extra_gates`` / ``extra_out`` (R̃'s terms).
    """

    def __init__(self, emb_size: int, ctx_size: int, dec_size: int, att_size: int, readout_size: int,
                 tgt_vocab: int, dropout: float, cell: str = "gru", target_attention: bool = False,
                 extra_size: int = 0, prefix: str = "", attention: Optional[nn.Module] = None, summary_size: int = 0):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"unknown decoder cell {cell!r}")
        cell_class = CELLS[cell]
        self.prefix, self.extra_size = prefix, extra_size
        self.init_state = nn.Linear(summary_size or ctx_size, dec_size)  # s_0 from the mean encoder state(s)
        # any attention of the protocol may serve (``attention``, reading the cell's state and projecting it
        # itself); by default RNNSearch's MLP, whose query the GRU and LSTM cells compute in their recurrent product
        fused = cell_class.fuses_query and attention is None
        self.attention = attention or MLPAttention(dec_size, ctx_size, att_size, project_query=not fused)
        self.target_attention = TargetAttention(dec_size, dec_size, att_size) if target_attention else None
        inputs = {"embedding": emb_size, **({"extra": extra_size} if extra_size else {})}
        contexts = {"source": ctx_size, **({"target": dec_size} if target_attention else {})}
        self.cell = cell_class(dec_size, inputs, contexts, att_size if fused else 0)
        extras = {**({"target": dec_size} if target_attention else {}), **({"extra": extra_size} if extra_size else {})}
        self.readout = DeepOutput(dec_size + emb_size + ctx_size, extras, readout_size, tgt_vocab, dropout)

    def _name(self, name: str) -> str:
        return self.prefix + name

    def _get(self, state: DecoderState, name: str) -> Optional[torch.Tensor]:
        name = self._name(name)
        return state[name] if name in state else None

    # -- state -------------------------------------------------------------------------
    def start(self, state: DecoderState, extra: Optional[torch.Tensor] = None) -> DecoderState:
        """Add this decoder's initial entries to a state holding ``memory`` and ``mask``.

        s_0 = tanh(W_s mean_i h_i); ``extra [B, X]`` is R̃ when the decoder takes one.
        """
        s0 = torch.tanh(self.init_state(self.summary(state)))
        keys = self.source_keys(state)
        entries = {**keys, **self.cell.start(s0)}
        static = list(keys)
        if self.target_attention is not None:
            entries["tmemory"], entries["tkeys"] = self.target_attention.empty(s0)
        if self.extra_size:
            if extra is None:
                raise ValueError("this decoder takes an extra context vector (R̃)")
            entries["extra_gates"], entries["extra_out"] = self.cell.inputs["extra"](extra), self.readout.term("extra", extra)
            static += ["extra_gates", "extra_out"]
        grows = {self._name("tmemory"), self._name("tkeys")} if self.target_attention is not None else set()
        # keys of sources held once per sentence are held so too
        shared = {self._name(k) for k in keys} if state.static and state.static <= state.shared else set()
        return DecoderState({**state.tensors, **{self._name(k): v for k, v in entries.items()}},
                            state.static | {self._name(k) for k in static}, state.grows | grows, state.beams,
                            state.shared | shared)

    # -- the encoder side: what a multi-source decoder (nmtkit.models.combination) replaces ---------------
    def summary(self, state: DecoderState) -> torch.Tensor:
        """What s_0 is computed from: the mean encoder state ``[B, C]``."""
        memory, mask = state["memory"], state["mask"]
        return memory.sum(1) / mask.sum(1, keepdim=True).to(memory.dtype)

    def source_keys(self, state: DecoderState) -> dict[str, torch.Tensor]:
        """The per-sentence part of the attention scores (U h_i), by state name (without the prefix)."""
        return {"keys": self.attention.keys(state["memory"])}

    def attend_sources(self, s: torch.Tensor, query: Optional[torch.Tensor], emb: torch.Tensor,
                       state: DecoderState) -> tuple[torch.Tensor, AttentionWeights]:
        """The source context c^e_j ``[B, C]`` and its weights by name, attended from ``s`` (its projection
        ``query`` if the cell computed it); ``emb`` E y_{j-1} and ``state`` (holding s_{j-1}) as they are."""
        ctx, alpha = self.attention(s if query is None else query, state.per_sentence(self._name("keys")),
                                    state.per_sentence("memory"), state.per_sentence("mask"))
        return ctx, {"source": alpha}

    # -- one step ----------------------------------------------------------------------
    def _attend(self, emb: torch.Tensor, state: DecoderState):
        """The cell's ``attend``: source attention (c^e_j) and, if on, target attention over s_1..s_{j-1} (c^d_j)."""

        def attend(s: torch.Tensor, query: Optional[torch.Tensor]):
            ctx, weights = self.attend_sources(s, query, emb, state)
            contexts = {"source": ctx}
            if self.target_attention is not None:  # Eq. 6-7
                memory = self._get(state, "tmemory")
                contexts["target"], weights["target"] = self.target_attention(
                    s, self._get(state, "tkeys"), memory, target_mask(state, memory.size(1)))
            return contexts, weights

        return attend

    def _input_gates(self, emb: torch.Tensor, state: DecoderState) -> torch.Tensor:
        gi = self.cell.inputs["embedding"](emb)
        extra = self._get(state, "extra_gates")
        if extra is not None:
            gi = gi + (extra.unsqueeze(1) if gi.dim() == 3 else extra)
        return gi

    def _logits(self, s: torch.Tensor, emb: torch.Tensor, contexts: dict, state: DecoderState) -> torch.Tensor:
        """Deep output (Eq. 11), for one step ``[B, .]`` or all ``[B, T, .]``."""
        extras = {"target": contexts["target"]} if "target" in contexts else {}
        return self.readout(torch.cat([s, emb, contexts["source"]], dim=-1), extras, self._get(state, "extra_out"))

    def _recur(self, gi: torch.Tensor, emb: torch.Tensor, state: DecoderState) -> tuple[DecoderState, dict,
                                                                                          AttentionWeights]:
        cell_state = {k: self._get(state, k) for k in self.cell.state_names}
        new, contexts, weights = self.cell.step(gi, cell_state, self._attend(emb, state))
        updates = {self._name(k): v for k, v in new.items()}
        if self.target_attention is not None:  # M^{j+1}_tgt = M^j_tgt ∪ {s_j}
            updates[self._name("tmemory")], updates[self._name("tkeys")] = self.target_attention.extend(
                self._get(state, "tmemory"), self._get(state, "tkeys"), new["hidden"])
        return state.replace(**updates), contexts, weights

    def step(self, emb: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        """Logits ``[B, V]`` of step j from E y_{j-1} ``[B, E]``, the new state and the weights."""
        state, contexts, weights = self._recur(self._input_gates(emb, state), emb, state)
        return self._logits(self._get(state, "hidden"), emb, contexts, state), state, weights

    # -- teacher forcing -----------------------------------------------------------------
    @property
    def accelerated(self) -> bool:
        """Whether teacher forcing runs the hand-written recurrence (:func:`fast_recurrences.covers_decoder`)."""
        return covers_decoder(self.cell, self.attention, self.target_attention)

    def forward(self, emb: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, torch.Tensor, AttentionWeights]:
        """Logits ``[B, T, V]``, states s_1..s_T ``[B, T, H]`` and weights for embedded inputs ``[B, T, E]``.

        ``target`` weights come as ``[B, T, T]``, row j holding β_tj for t < j and zeros elsewhere.
        """
        gi = self._input_gates(emb, state)
        if self.accelerated:
            return self._accelerated(emb, gi, state)
        steps = emb.size(1)
        states, contexts, weights = [], {}, {}
        for j in range(steps):
            state, ctx, w = self._recur(gi[:, j], emb[:, j], state)
            states.append(self._get(state, "hidden"))
            for store, values in ((contexts, ctx), (weights, w)):
                for name, value in values.items():
                    store.setdefault(name, []).append(value)
        contexts = {name: torch.stack(c, 1) for name, c in contexts.items()}
        attention = {name: torch.stack(w if name != "target" else [nn.functional.pad(b, (0, steps - b.size(1)))
                                                                   for b in w], 1)
                     for name, w in weights.items()}
        states = torch.stack(states, 1)
        return self._logits(states, emb, contexts, state), states, attention

    def _accelerated(self, emb: torch.Tensor, gi: torch.Tensor, state: DecoderState):
        """:meth:`forward` through :func:`attentive_gru`: the same maths as the steps, faster."""
        h, ta = self.cell.hidden, self.target_attention
        target = None if ta is None else (ta.query.weight, ta.key.weight, ta.key.bias, ta.v.weight,
                                          self.cell.contexts["target"].weight)
        out = attentive_gru(gi.transpose(0, 1), self._get(state, "hidden"), self._get(state, "keys"),
                            state["memory"], state["mask"], h.weight, h.bias, self.cell.contexts["source"].weight,
                            self.attention.v.weight, target)
        states = out[0].transpose(0, 1)
        contexts, weights = {"source": out[1].transpose(0, 1)}, {"source": out[2]}
        if ta is not None:
            contexts["target"], weights["target"] = out[3].transpose(0, 1), out[4]
        return self._logits(states, emb, contexts, state), states, weights


class RNNDecoding(Seq2Seq):
    """A model whose ``decoder`` is an :class:`RNNDecoder` fed its target embeddings ``tgt_emb`` through
    ``dropout``: decoding steps and teacher forcing from the state that ``encode`` gives."""

    decoder: RNNDecoder
    tgt_emb: nn.Embedding
    dropout: nn.Dropout
    output_layers = ("decoder.readout.output",)
    merges_states = True  # (its target memory grows: masked before each row's START)

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        logits, state, weights = self.decoder.step(self.dropout(self.tgt_emb(prev)), state)
        return torch.log_softmax(logits.float(), dim=-1), state, weights

    def forward(self, batch) -> ModelOutput:
        emb = self.dropout(self.tgt_emb(batch.tgt_in))  # before the encoder's dropout: the order of random draws
        state = self.encode(batch)
        logits, _, weights = self.decoder(emb, state)
        return ModelOutput(logits, weights, state=state)
