"""The Transformer (Vaswani et al. 2017; bidirectional-target-attention.txt §2.2, Eq. 6-9): ``transformer``.

Encoder layers: self-attention over the source, then a position-wise feed-forward network (Eq. 7),
H_enc (Eq. 8). Decoder layers: causal self-attention over the target prefix (H_dec), attention over
H_enc (F_dec, Eq. 8), feed-forward. Every sublayer has a residual connection and layer normalisation,
after it (``norm: post``, the paper's) or before it (``pre``, which trains deep stacks more stably,
with one more normalisation at the end of each stack). Embeddings are scaled by sqrt(d_model) and
added to sinusoidal or learned positions.

Decoding is incremental: the state holds, per decoder layer, the self-attention keys and values of
the steps so far (extended at each step, reordered with the beams) and the keys and values of H_enc,
computed once per sentence.
"""
from __future__ import annotations

import math
from typing import Mapping, Optional

import torch
from torch import nn

from nmtkit.config import POSITIVE, PROBABILITY, Option
from nmtkit.data.batching import Batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import PAD, Vocab
from nmtkit.errors import NmtkitError
from nmtkit.models.multihead import MultiHeadAttention
from nmtkit.models.registry import option_values, register_model
from nmtkit.models.seq2seq import AttentionWeights, ModelOutput, Seq2Seq
from nmtkit.models.state import DecoderState

TRANSFORMER_OPTIONS = [
    Option("d_model", 512, "model (embedding and hidden) size", allows=POSITIVE),
    Option("ffn_size", 2048, "inner size of the position-wise feed-forward networks", allows=POSITIVE),
    Option("heads", 8, "attention heads (d_model must be a multiple)", allows=POSITIVE),
    Option("enc_layers", 6, "encoder layers", allows=POSITIVE),
    Option("dec_layers", 6, "decoder layers", allows=POSITIVE),
    Option("dropout", 0.1, "dropout on embeddings and on every sublayer's output before its residual",
           allows=PROBABILITY),
    Option("attention_dropout", 0.1, "dropout on attention weights", allows=PROBABILITY),
    Option("activation_dropout", 0.0, "dropout after the feed-forward networks' ReLU", allows=PROBABILITY),
    Option("norm", "post", "layer normalisation after each residual sum (post, the paper's) or before each "
           "sublayer (pre)", choices=("post", "pre")),
    Option("positions", "sinusoidal", "position encodings: sinusoidal (the paper's) or learned",
           choices=("sinusoidal", "learned")),
    Option("max_positions", 1024, "learned positions: the longest sequence (source or output) they cover",
           allows=POSITIVE),
    Option("share_embeddings", False, "one embedding matrix for source and target (needs a joint vocabulary)"),
    Option("tie_embeddings", True, "the output layer shares the target embeddings (the paper's)"),
]


class FeedForward(nn.Module):
    """FFN(x) = f_2(max(0, f_1(x))) (Eq. 7)."""

    def __init__(self, d_model: int, inner: int, dropout: float):
        super().__init__()
        self.inner, self.outer, self.dropout = nn.Linear(d_model, inner), nn.Linear(inner, d_model), nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inner(x))
        return self.outer(self.dropout(h) if self.training else h)


class Sublayers(nn.Module):
    """Residual connections with layer normalisation around a layer's sublayers, post- or pre-norm: sublayer ``i``
    reads :meth:`before` ``(i, x)`` and its output ``f`` joins the residual stream in :meth:`after` ``(i, x, f)``."""

    def __init__(self, d_model: int, count: int, dropout: float, pre_norm: bool):
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(count))
        self.dropout, self.pre_norm = nn.Dropout(dropout), pre_norm

    def before(self, i: int, x: torch.Tensor) -> torch.Tensor:
        """The input of sublayer ``i``: x, normalised first with pre-norm."""
        return self.norms[i](x) if self.pre_norm else x

    def after(self, i: int, x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        """x + f normalised (post-norm) or x + f (pre-norm), with dropout on f in training."""
        if self.training:
            f = self.dropout(f)
        return x + f if self.pre_norm else self.norms[i](x + f)


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, ffn_size: int, dropout: float, attention_dropout: float,
                 activation_dropout: float, pre_norm: bool):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, heads, attention_dropout)
        self.ffn = FeedForward(d_model, ffn_size, activation_dropout)
        self.sub = Sublayers(d_model, 2, dropout, pre_norm)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        sub = self.sub
        x = sub.after(0, x, self.attention.self_attend(sub.before(0, x), mask)[0])
        return sub.after(1, x, self.ffn(sub.before(1, x)))


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, ffn_size: int, dropout: float, attention_dropout: float,
                 activation_dropout: float, pre_norm: bool):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, heads, attention_dropout)
        self.memory_attention = MultiHeadAttention(d_model, heads, attention_dropout, self_attention=False)
        self.ffn = FeedForward(d_model, ffn_size, activation_dropout)
        self.sub = Sublayers(d_model, 3, dropout, pre_norm)

    def forward(self, y: torch.Tensor, memory: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor,
                cache: Optional[tuple[torch.Tensor, torch.Tensor]] = None, weights: bool = False,
                head: Optional[int] = None) -> tuple[torch.Tensor, Optional[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
        """The layer over a target prefix ``y`` (all of it, causally; or, with ``cache``, the new step): output,
        memory attention weights if asked, the self-attention keys and values."""
        sub = self.sub
        a, _, kv = self.self_attention.self_attend(sub.before(0, y), causal=cache is None, cache=cache)
        y = sub.after(0, y, a)
        a, w = self.memory_attention.attend_memory(sub.before(1, y), memory, mask, weights, head)
        y = sub.after(1, y, a)
        return sub.after(2, y, self.ffn(sub.before(2, y))), w, kv


class DecoderStack(nn.Module):
    """Decoder layers and, with pre-norm, the final normalisation; run over a whole target prefix (training) or
    one step at a time with the keys and values of earlier steps in a :class:`DecoderState` under ``prefix``."""

    def __init__(self, layers: int, layer_args: tuple, prefix: str):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(*layer_args) for _ in range(layers))
        self.norm = nn.LayerNorm(layer_args[0]) if layer_args[-1] else nn.Identity()  # layer_args end with pre_norm
        self.prefix = prefix
        # the state's names of each layer's memory keys and values and self-attention caches
        self.names = [tuple(f"{prefix}{kind}{i}" for kind in ("memory_k", "memory_v", "self_k", "self_v"))
                      for i in range(layers)]
        self.shown_layer, self.shown_head = layers - 1, None  # whose memory attention weights are given when asked

    def _shows(self, i: int, weights: bool) -> bool:
        return weights and i == self.shown_layer

    def memory(self, h: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Each layer's keys and values of a memory ``[B, S, d]``."""
        return [layer.memory_attention.keys_values(h) for layer in self.layers]

    def forward(self, y: torch.Tensor, memory: list[tuple[torch.Tensor, torch.Tensor]], mask: torch.Tensor,
                weights: bool = False) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Outputs ``[B, T, d]`` over the embedded prefix ``y`` and, if asked, the last layer's memory attention."""
        shown = None
        for i, (layer, kv) in enumerate(zip(self.layers, memory)):
            y, w, _ = layer(y, kv, mask, weights=self._shows(i, weights), head=self.shown_head)
            shown = w if w is not None else shown
        return self.norm(y), shown

    def start(self, memory: list[tuple[torch.Tensor, torch.Tensor]], mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """The state tensors before the first step: the memory's keys and values and mask, empty caches."""
        k0 = memory[0][0]
        empty = k0.new_zeros(k0.size(0), k0.size(1), 0, k0.size(3))
        tensors = {f"{self.prefix}mask": mask}
        for names, (k, v) in zip(self.names, memory):
            tensors.update(zip(names, (k, v, empty, empty)))
        return tensors

    def statics(self, tensors: Mapping[str, torch.Tensor]) -> list[str]:
        """The names of :meth:`start`'s tensors that depend on the source only."""
        return [n for n in tensors if n.startswith((f"{self.prefix}memory", f"{self.prefix}mask"))]

    def step(self, y: torch.Tensor, state: DecoderState, weights: bool = False
             ) -> tuple[torch.Tensor, dict[str, torch.Tensor], Optional[torch.Tensor]]:
        """One step: the output ``[B, d]`` for the embedded token ``y [B, 1, d]``, the grown caches, the weights."""
        shown, updates, mask = None, {}, state[f"{self.prefix}mask"]
        for i, (layer, (mem_k, mem_v, self_k, self_v)) in enumerate(zip(self.layers, self.names)):
            y, w, (k, v) = layer(y, (state[mem_k], state[mem_v]), mask, cache=(state[self_k], state[self_v]),
                                 weights=self._shows(i, weights), head=self.shown_head)
            shown = w if w is not None else shown
            updates[self_k], updates[self_v] = k, v
        return self.norm(y.squeeze(1)), updates, None if shown is None else shown.squeeze(1)

    def steps_done(self, state: DecoderState) -> int:
        return state[self.names[0][2]].size(2)


class Positions(nn.Module):
    """Sinusoidal (PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)) or learned positions."""

    def __init__(self, d_model: int, kind: str, max_positions: int):
        super().__init__()
        self.d_model, self.max_positions = d_model, max_positions
        self.learned = nn.Embedding(max_positions, d_model) if kind == "learned" else None
        self.table = torch.empty(0, d_model)  # sinusoids computed so far (not a parameter, not saved)

    def forward(self, length: int, offset: int, device: torch.device) -> torch.Tensor:
        """Encodings ``[length, d_model]`` of positions offset .. offset + length - 1."""
        end = offset + length
        if self.learned is not None:
            if end > self.max_positions:
                raise NmtkitError(f"a sequence of {end} tokens is longer than the {self.max_positions} "
                                  "learned positions of this model (max_positions)")
            return self.learned(torch.arange(offset, end, device=device))
        if self.table.size(0) < end or self.table.device != device:
            self.table = self._sinusoids(max(end, 2 * self.table.size(0), 128), device)
        return self.table[offset:end]

    def _sinusoids(self, length: int, device: torch.device) -> torch.Tensor:
        freq = torch.exp(torch.arange(0, self.d_model, 2, device=device) * (-math.log(10000.0) / self.d_model))
        angles = torch.arange(length, device=device).unsqueeze(1).float() * freq
        return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)[:, :self.d_model]


class Transformer(Seq2Seq):
    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 512, ffn_size: int = 2048, heads: int = 8,
                 enc_layers: int = 6, dec_layers: int = 6, dropout: float = 0.1, attention_dropout: float = 0.1,
                 activation_dropout: float = 0.0, norm: str = "post", positions: str = "sinusoidal",
                 max_positions: int = 1024, share_embeddings: bool = False, tie_embeddings: bool = True):
        super().__init__()
        if share_embeddings and src_vocab != tgt_vocab:
            raise NmtkitError(f"--share-embeddings needs one vocabulary for source and target; they have "
                              f"{src_vocab} and {tgt_vocab} entries", exit_code=2)
        if d_model % heads:
            raise NmtkitError(f"--d-model {d_model} is not a multiple of --heads {heads}", exit_code=2)
        self.d_model, self.pre_norm = d_model, norm == "pre"
        self.src_emb = nn.Embedding(src_vocab, d_model, padding_idx=PAD)
        self.tgt_emb = self.src_emb if share_embeddings else nn.Embedding(tgt_vocab, d_model, padding_idx=PAD)
        self.positions = Positions(d_model, positions, max_positions)
        layer_args = (d_model, heads, ffn_size, dropout, attention_dropout, activation_dropout, self.pre_norm)
        self.encoder = nn.ModuleList(EncoderLayer(*layer_args) for _ in range(enc_layers))
        self.enc_norm = nn.LayerNorm(d_model) if self.pre_norm else nn.Identity()
        self.decoder = DecoderStack(dec_layers, layer_args, "")
        self.output = nn.Linear(d_model, tgt_vocab, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.layer_args, self.tie = layer_args, tie_embeddings
        self._init_parameters(tie_embeddings)

    def _init_parameters(self, tie: bool) -> None:
        """Xavier-uniform matrices, zero biases, embeddings N(0, d^-1/2) (as fairseq and the tensor2tensor code)."""
        for name, p in self.named_parameters():
            if p.dim() > 1 and "emb" not in name and "positions" not in name:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        embeddings = [self.src_emb, self.tgt_emb, self.positions.learned]
        for i, emb in enumerate(embeddings):  # in this order, each once (shared ones are one module)
            if emb is not None and emb not in embeddings[:i]:
                nn.init.normal_(emb.weight, 0.0, self.d_model ** -0.5)
        self.init_parameters(0.0, [(self.output, self.tgt_emb)] if tie else [])

    def _embed(self, embedding: nn.Embedding, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        x = embedding(tokens) * math.sqrt(self.d_model) + self.positions(tokens.size(1), offset, tokens.device)
        return self.dropout(x) if self.training else x

    def _encode(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """H_enc ``[B, S, d]`` (Eq. 8) and the source mask ``[B, 1, 1, S]`` (True: a real token)."""
        src = batch["src"]
        mask = src.mask[:, None, None, :]
        h = self._embed(self.src_emb, src.data)
        for layer in self.encoder:
            h = layer(h, mask)
        return self.enc_norm(h), mask

    def memory(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """What the decoder attends to ``[B, M, d]`` and its mask ``[B, 1, 1, M]``: H_enc (Eq. 8), M = S."""
        return self._encode(batch)

    def choose_attention(self, layer: Optional[int] = None, head: Optional[int] = None) -> None:
        """The weights given when asked: the memory attention of decoder ``layer`` (1-based; default the last),
        of ``head`` (1-based; default the mean over the heads)."""
        layers, heads = len(self.decoder.layers), self.decoder.layers[0].memory_attention.heads
        if layer is not None and not 1 <= layer <= layers:
            raise NmtkitError(f"--attention-layer: this model has decoder layers 1..{layers}, not {layer}", exit_code=2)
        if head is not None and not 1 <= head <= heads:
            raise NmtkitError(f"--attention-head: this model has heads 1..{heads}, not {head}", exit_code=2)
        self.decoder.shown_layer = (layer or layers) - 1
        self.decoder.shown_head = None if head is None else head - 1

    def attention(self, w: Optional[torch.Tensor], sources: int) -> AttentionWeights:
        """Attention weights for attention files from the last layer's weights over the memory, whose first
        ``sources`` positions are the source's."""
        return {"source": w} if w is not None else {}

    def forward(self, batch: Batch) -> ModelOutput:
        memory, mask = self.memory(batch)
        h, w = self.decoder(self._embed(self.tgt_emb, batch.tgt_in), self.decoder.memory(memory), mask,
                            self.weights_wanted)
        return ModelOutput(self.output(h), self.attention(w, batch["src"].data.size(1)))

    def encode(self, batch: Batch) -> DecoderState:
        memory, mask = self.memory(batch)
        tensors = self.decoder.start(self.decoder.memory(memory), mask)
        sources = torch.full_like(batch["src"].lengths, batch["src"].data.size(1))  # S of every row, for attention()
        return DecoderState({**tensors, "sources": sources}, static=self.decoder.statics(tensors) + ["sources"])

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        y = self._embed(self.tgt_emb, prev.unsqueeze(1), offset=self.decoder.steps_done(state))
        h, updates, w = self.decoder.step(y, state, self.weights_wanted)
        return torch.log_softmax(self.output(h).float(), dim=-1), state.replace(**updates), \
            self.attention(w, int(state["sources"][0]) if w is not None else 0)


@register_model("transformer", TRANSFORMER_OPTIONS, "the Transformer (Vaswani et al. 2017; "
                "bidirectional-target-attention.txt §2.2): self-attention encoder and decoder, post- or pre-norm")
def build(config: dict, meta: CorpusMeta, vocabs: Mapping[str, Vocab]) -> Transformer:
    src, tgt = vocabs.get("src"), vocabs.get("tgt")
    if config.get("share_embeddings") and src is not None and tgt is not None and len(src) == len(tgt) and \
            src.id_to_token(range(len(src))) != tgt.id_to_token(range(len(tgt))):
        raise NmtkitError("--share-embeddings needs one vocabulary for source and target (preprocess --joint); "
                          "the corpus has two of the same size", exit_code=2)
    return Transformer(*meta.translation_sizes("transformer"), **option_values(config, TRANSFORMER_OPTIONS))
