"""The Transformer (Vaswani et al. 2017; bidirectional-target-attention.txt §2.2, Eq. 6-9): ``transformer``.

Encoder layers: self-attention over the source, then a position-wise feed-forward network (Eq. 7),
H_enc (Eq. 8). Decoder layers: causal self-attention over the target prefix (H_dec), attention over
H_enc (F_dec, Eq. 8), feed-forward. Every sublayer has a residual connection and layer normalisation,
after it (``norm: post``, the paper's) or before it (``pre``, which trains deep stacks more stably,
with one more normalisation at the end of each stack). Embeddings are scaled by sqrt(d_model) and
added to sinusoidal or learned positions.

Decoding is incremental: the state holds, per decoder layer, the self-attention keys and values of
the steps so far (extended at each step, reordered with the beams) and the keys and values of H_enc,
computed once per sentence. States of rows at different steps merge (continuous batching): each row's caches are
padded on the left, those positions masked in its self-attention, and its position encoding is of its own steps.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Mapping, Optional, Union

import torch
from torch import nn

from nmtkit.config import POSITIVE, PROBABILITY, Option
from nmtkit.data.batching import Batch, Stream
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import PAD, Vocab
from nmtkit.errors import NmtkitError
from nmtkit.models.multihead import Cache, MultiHeadAttention
from nmtkit.models.registry import option_values, register_model
from nmtkit.models.seq2seq import AttentionWeights, ModelOutput, Seq2Seq
from nmtkit.models.state import START, DecoderState, target_mask

#: memory attention weights ``[B, (T,) S]``, or several by name (multi-source layers)
Weights = Union[torch.Tensor, dict[str, torch.Tensor]]
Masks = Union[torch.Tensor, tuple[torch.Tensor, ...]]

TRANSFORMER_OPTIONS = [
    Option("d_model", 512, "model (embedding and hidden) size", allows=POSITIVE),
    Option("ffn_size", 2048, "inner size of the position-wise feed-forward networks", allows=POSITIVE),
    Option("heads", 8, "attention heads (d_model must be a multiple)", allows=POSITIVE),
    Option("enc_layers", 6, "encoder layers", allows=POSITIVE),
    Option("dec_layers", 6, "decoder layers", allows=POSITIVE),
    Option("dropout", 0.1, "dropout on embeddings and on every sublayer's output before its residual",
           allows=PROBABILITY, training_only=True),
    Option("attention_dropout", 0.1, "dropout on attention weights", allows=PROBABILITY, training_only=True),
    Option("activation_dropout", 0.0, "dropout after the feed-forward networks' ReLU", allows=PROBABILITY,
           training_only=True),
    Option("norm", "post", "layer normalisation after each residual sum (post, the paper's) or before each "
           "sublayer (pre)", choices=("post", "pre")),
    Option("positions", "sinusoidal", "position encodings: sinusoidal (the paper's) or learned",
           choices=("sinusoidal", "learned")),
    Option("max_positions", 1024, "learned positions: the longest sequence (source or output) they cover; "
           "sinusoidal: the positions computed ahead (a longer sequence computes more)", allows=POSITIVE),
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
    """Causal self-attention, attention over the memory, feed-forward; each a sublayer of :class:`Sublayers`.

    The memory is what the model's encoder side gives (H_enc ``[B, S, d]``); :meth:`keys_values` turns it into this
    layer's tensors, once per sentence, and :meth:`cross` is the attention over them (the part a multi-source
    layer replaces: several memories, with their ``masks``, each ``[B, 1, 1, S_k]``)."""

    memory_tensors = 2  # how many tensors :meth:`keys_values` gives (keys and values)
    memory_masks = 1  # how many memory masks :meth:`cross` reads

    def __init__(self, d_model: int, heads: int, ffn_size: int, dropout: float, attention_dropout: float,
                 activation_dropout: float, pre_norm: bool, memory_attention: Optional[nn.Module] = None,
                 memory_sublayers: int = 1):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, heads, attention_dropout)
        self.memory_attention = memory_attention or MultiHeadAttention(d_model, heads, attention_dropout,
                                                                       self_attention=False)
        self.ffn = FeedForward(d_model, ffn_size, activation_dropout)
        self.sub = Sublayers(d_model, 2 + memory_sublayers, dropout, pre_norm)

    def keys_values(self, memory) -> tuple[torch.Tensor, ...]:
        """This layer's keys and values of the memory, computed once per sentence."""
        return self.memory_attention.keys_values(memory)

    def cross(self, y: torch.Tensor, memory: tuple[torch.Tensor, ...], masks: tuple[torch.Tensor, ...],
              weights: bool, head: Optional[int]) -> tuple[torch.Tensor, Optional[Weights]]:
        """The memory sublayer (F_dec, Eq. 8): ``y`` after it, and its weights ``[B, T, S]`` if asked."""
        a, w = self.memory_attention.attend_memory(self.sub.before(1, y), memory, masks[0], weights, head)
        return self.sub.after(1, y, a), w

    def forward(self, y: torch.Tensor, memory: tuple[torch.Tensor, ...], masks: tuple[torch.Tensor, ...],
                cache: Optional[Cache] = None, weights: bool = False,
                head: Optional[int] = None, cache_mask: Optional[torch.Tensor] = None
                ) -> tuple[torch.Tensor, Optional[Weights], tuple[torch.Tensor, torch.Tensor]]:
        """The layer over a target prefix ``y`` (all of it, causally; or, with ``cache``, the new step, which sees
        the cached positions where ``cache_mask`` ``[B, 1, 1, T + 1]`` is True, if given): output, memory attention
        weights if asked, the self-attention keys and values."""
        sub = self.sub
        a, kv = self.self_attention.self_attend(sub.before(0, y), cache_mask, causal=cache is None, cache=cache)
        y, w = self.cross(sub.after(0, y, a), memory, masks, weights, head)
        last = len(sub.norms) - 1
        return sub.after(last, y, self.ffn(sub.before(last, y))), w, kv


def _grown(state: DecoderState, self_k: str, self_v: str, k: torch.Tensor, v: torch.Tensor
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """A layer's cached keys and values in ``state`` with a step's ``k`` and ``v`` appended (:data:`Cache`), the rows
    a reorder recorded taken."""
    return state.grown(self_k, k), state.grown(self_v, v)


def _masks(mask: Masks) -> tuple[torch.Tensor, ...]:
    return mask if isinstance(mask, tuple) else (mask,)


def _step_weights(w: Optional[Weights]) -> Optional[Weights]:
    """Weights of one step ``[B, 1, S]`` as ``[B, S]`` (each of a dict of them)."""
    if w is None:
        return None
    return {k: v.squeeze(1) for k, v in w.items()} if isinstance(w, dict) else w.squeeze(1)


class DecoderStack(nn.Module):
    """Decoder layers and, with pre-norm, the final normalisation; run over a whole target prefix (training) or
    one step at a time with the keys and values of earlier steps in a :class:`DecoderState` under ``prefix``.

    ``layer(*layer_args)`` makes each layer (:class:`DecoderLayer` by default). The memory mask is one
    ``[B, 1, 1, S]`` tensor, or a tuple of them for layers that attend to several memories."""

    def __init__(self, layers: int, layer_args: tuple, prefix: str, layer: Callable[..., DecoderLayer] = DecoderLayer):
        super().__init__()
        self.layers = nn.ModuleList(layer(*layer_args) for _ in range(layers))
        self.norm = nn.LayerNorm(layer_args[0]) if layer_args[-1] else nn.Identity()  # layer_args end with pre_norm
        self.prefix = prefix
        self.shown_layer, self.shown_head = layers - 1, None  # whose memory attention weights are given when asked

    def _shows(self, i: int, weights: bool) -> bool:
        return weights and i == self.shown_layer

    def _names(self, i: int, memory_tensors: int) -> tuple[list[str], str, str]:
        """The state's names of layer ``i``'s memory tensors and self-attention keys and values."""
        return [f"{self.prefix}memory{i}.{j}" for j in range(memory_tensors)], f"{self.prefix}self_k{i}", \
            f"{self.prefix}self_v{i}"

    def memory(self, h) -> list[tuple[torch.Tensor, ...]]:
        """Each layer's keys and values of a memory (``[B, S, d]``; what the layers read)."""
        return [layer.keys_values(h) for layer in self.layers]

    def forward(self, y: torch.Tensor, memory: list[tuple[torch.Tensor, ...]], mask: Masks,
                weights: bool = False) -> tuple[torch.Tensor, Optional[Weights]]:
        """Outputs ``[B, T, d]`` over the embedded prefix ``y`` and, if asked, the shown layer's memory attention."""
        shown, masks = None, _masks(mask)
        for i, (layer, kv) in enumerate(zip(self.layers, memory)):
            y, w, _ = layer(y, kv, masks, weights=self._shows(i, weights), head=self.shown_head)
            shown = w if w is not None else shown
        return self.norm(y), shown

    def start(self, memory: list[tuple[torch.Tensor, ...]], mask: Masks) -> dict[str, torch.Tensor]:
        """The state tensors before the first step: the memory's keys and values and masks, empty caches."""
        k0 = memory[0][0]
        empty = k0.new_zeros(k0.size(0), k0.size(1), 0, k0.size(3))
        tensors = {f"{self.prefix}mask{j}": m for j, m in enumerate(_masks(mask))}
        for i, kv in enumerate(memory):
            names, self_k, self_v = self._names(i, len(kv))
            tensors.update({**dict(zip(names, kv)), self_k: empty, self_v: empty})
        return tensors

    def statics(self, tensors: Mapping[str, torch.Tensor]) -> list[str]:
        """The names of :meth:`start`'s tensors that depend on the source only."""
        return [n for n in tensors if n.startswith((f"{self.prefix}memory", f"{self.prefix}mask"))]

    def growing(self, tensors: Mapping[str, torch.Tensor]) -> list[str]:
        """The names of :meth:`start`'s tensors that grow by a position a step (the self-attention caches)."""
        return [n for n in tensors if n.startswith(f"{self.prefix}self_")]

    def step(self, y: torch.Tensor, state: DecoderState, weights: bool = False
             ) -> tuple[torch.Tensor, dict[str, torch.Tensor], Optional[Weights]]:
        """One step: the output ``[B, d]`` for the embedded token ``y [B, 1, d]``, the grown caches, the weights."""
        shown, updates = None, {}  # (the memory read once per sentence, for its beams together)
        masks = tuple(state.per_sentence(f"{self.prefix}mask{j}") for j in range(self.layers[0].memory_masks))
        own = target_mask(state, self.steps_done(state) + 1)  # (a merged state: each row's own positions)
        cache_mask = None if own is None else own[:, None, None, :]
        for i, layer in enumerate(self.layers):
            names, self_k, self_v = self._names(i, layer.memory_tensors)
            cache = functools.partial(_grown, state, self_k, self_v)
            y, w, (k, v) = layer(y, tuple(state.per_sentence(n) for n in names), masks, cache=cache,
                                 weights=self._shows(i, weights), head=self.shown_head, cache_mask=cache_mask)
            shown = w if w is not None else shown
            updates[self_k], updates[self_v] = k, v
        return self.norm(y.squeeze(1)), updates, _step_weights(shown)

    def steps_done(self, state: DecoderState) -> int:
        return state[f"{self.prefix}self_k0"].size(2)


class Positions(nn.Module):
    """Sinusoidal (PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)) or learned positions."""

    def __init__(self, d_model: int, kind: str, max_positions: int):
        super().__init__()
        self.d_model, self.max_positions = d_model, max_positions
        self.learned = nn.Embedding(max_positions, d_model) if kind == "learned" else None
        # sinusoids: computed once for max_positions (a buffer, not saved: it follows the model to its device), and
        # only longer sequences make it grow, so that a compiled model sees one table (no recompilation)
        table = torch.empty(0, d_model) if self.learned else self._sinusoids(max_positions, None)
        self.register_buffer("table", table, persistent=False)

    @property
    def limit(self) -> Optional[int]:
        """How many positions there are encodings for: the learned table's size; None for sinusoids (any)."""
        return self.max_positions if self.learned is not None else None

    def forward(self, length: int, offset: int, device: torch.device) -> torch.Tensor:
        """Encodings ``[length, d_model]`` of positions offset .. offset + length - 1."""
        end = offset + length
        self._cover(end, device)
        if self.learned is not None:
            return self.learned(torch.arange(offset, end, device=device))
        return self.table[offset:end]

    def at(self, positions: torch.Tensor, end: int) -> torch.Tensor:
        """Encodings ``[..., d_model]`` of ``positions`` (a long tensor, each below ``end``)."""
        self._cover(end, positions.device)
        return self.learned(positions) if self.learned is not None else self.table[positions]

    def _cover(self, end: int, device: torch.device) -> None:
        """Make sure positions 0 .. end - 1 have encodings: beyond the learned ones, an error; the sinusoids' table
        grows."""
        if self.learned is not None:
            if end > self.max_positions:
                raise NmtkitError(f"a sequence of {end} tokens is longer than the {self.max_positions} "
                                  "learned positions of this model (max_positions)")
        elif self.table.size(0) < end:
            self.table = self._sinusoids(max(end, 2 * self.table.size(0)), device)

    def _sinusoids(self, length: int, device: Optional[torch.device]) -> torch.Tensor:
        freq = torch.exp(torch.arange(0, self.d_model, 2, device=device) * (-math.log(10000.0) / self.d_model))
        angles = torch.arange(length, device=device).unsqueeze(1).float() * freq
        return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)[:, :self.d_model]


class Transformer(Seq2Seq):
    limit_option = "--max-positions"
    compiles_once = True
    merges_states = True  # (each row's caches masked before its START, its positions counted from there)

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
        self.decoder = DecoderStack(dec_layers, layer_args, "", self.decoder_layer)
        self.output = nn.Linear(d_model, tgt_vocab, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.layer_args, self.tie = layer_args, tie_embeddings
        self._init_parameters(tie_embeddings)

    def input_limit(self) -> Optional[int]:
        """A source and its ``</s>`` take one position each."""
        return None if self.positions.limit is None else self.positions.limit - 1

    def output_limit(self) -> Optional[int]:
        """``<s>`` and the tokens before ``</s>`` take one position each."""
        return self.input_limit()

    def decoder_layer(self, *layer_args) -> DecoderLayer:
        """One decoder layer (a multi-source model's attend to several memories)."""
        return DecoderLayer(*layer_args)

    def _init_parameters(self, tie: bool) -> None:
        """Xavier-uniform matrices, zero biases, embeddings N(0, d^-1/2) (as fairseq and the tensor2tensor code)."""
        for name, p in self.named_parameters():
            if p.dim() > 1 and "emb" not in name and "positions" not in name:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        for emb in self.modules():  # in the order of registration, each once (shared ones are one module)
            if isinstance(emb, nn.Embedding):
                nn.init.normal_(emb.weight, 0.0, self.d_model ** -0.5)
        self.init_parameters(0.0, [(self.output, self.tgt_emb)] if tie else [])

    def _embed(self, embedding: nn.Embedding, tokens: torch.Tensor, offset: int = 0,
               positions: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Embedded ``tokens [B, T]`` at positions from ``offset`` on, or at each row's ``positions [B, T, d]``."""
        if positions is None:
            positions = self.positions(tokens.size(1), offset, tokens.device)
        x = embedding(tokens) * math.sqrt(self.d_model) + positions
        return self.dropout(x) if self.training else x

    def _encode(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """H_enc ``[B, S, d]`` (Eq. 8) of the first input and its mask ``[B, 1, 1, S]`` (True: a real token)."""
        return self._run_encoder(self.src_emb, self.encoder, self.enc_norm, batch[self.inputs[0]])

    def _run_encoder(self, embedding: nn.Embedding, layers: nn.ModuleList, norm: nn.Module,
                     stream: Stream) -> tuple[torch.Tensor, torch.Tensor]:
        """An encoder stack's output over a text stream, and the stream's mask ``[B, 1, 1, S]``."""
        mask = stream.mask[:, None, None, :]
        h = self._embed(embedding, stream.data)
        for layer in layers:
            h = layer(h, mask)
        return norm(h), mask

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
        return self.teacher_forced(batch, *self.memory(batch))

    def teacher_forced(self, batch: Batch, memory, mask: Masks) -> ModelOutput:
        """The decoder over ``batch``'s target prefixes attending to the encoded ``memory`` (:meth:`memory`)."""
        h, w = self.decoder(self._embed(self.tgt_emb, batch.tgt_in), self.decoder.memory(memory), mask,
                            self.weights_wanted)
        return ModelOutput(self.output(h), self.attention(w, batch[self.inputs[0]].data.size(1)))

    def encode(self, batch: Batch) -> DecoderState:
        memory, mask = self.memory(batch)
        tensors = self.decoder.start(self.decoder.memory(memory), mask)
        first = batch[self.inputs[0]]
        sources = torch.full_like(first.lengths, first.data.size(1))  # S of every row, for attention()
        grows = self.decoder.growing(tensors)
        return DecoderState({**tensors, "sources": sources}, static=["sources"], grows=grows,
                            shared=self.decoder.statics(tensors), deferred=grows)

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        steps = self.decoder.steps_done(state)
        own = None  # (a merged state's rows are at steps of their own, counted from their START)
        if START in state:
            own = self.positions.at((steps - state[START]).unsqueeze(1), steps + 1)
        y = self._embed(self.tgt_emb, prev.unsqueeze(1), offset=steps, positions=own)
        h, updates, w = self.decoder.step(y, state, self.weights_wanted)
        return torch.log_softmax(self.output(h).float(), dim=-1), state.stepped(**updates), \
            self.attention(w, int(state["sources"][0]) if w is not None else 0)


def check_shared_vocabulary(config: Mapping, src: Optional[Vocab], tgt: Optional[Vocab]) -> None:
    """``--share-embeddings``: the source (the encoder's own) and the target read one vocabulary, else a one-line
    error; two of the same size would share rows between different words (other sizes: the model refuses)."""
    if config.get("share_embeddings") and src is not None and tgt is not None and len(src) == len(tgt) and \
            src.id_to_token(range(len(src))) != tgt.id_to_token(range(len(tgt))):
        raise NmtkitError("--share-embeddings needs one vocabulary for source and target (preprocess --joint); "
                          "the corpus has two of the same size", exit_code=2)


@register_model("transformer", TRANSFORMER_OPTIONS, "the Transformer (Vaswani et al. 2017; "
                "bidirectional-target-attention.txt §2.2): self-attention encoder and decoder, post- or pre-norm")
def build(config: dict, meta: CorpusMeta, vocabs: Mapping[str, Vocab]) -> Transformer:
    check_shared_vocabulary(config, vocabs.get("src"), vocabs.get("tgt"))
    return Transformer(*meta.translation_sizes("transformer"), **option_values(config, TRANSFORMER_OPTIONS))
