"""``multi-source-transformer``: the Transformer's decoder attending to several encoders.

The strategies of multi-source-attention.txt carried over to the decoder's memory attention (as Libovický,
Helcl and Mareček 2018 did; ``serial`` is Marian's dual-source Transformer):

- ``serial``: one memory sublayer per encoder, one after the other, each with its residual connection and
  layer normalisation;
- ``parallel``: the multi-head attentions over every encoder read the same input; their outputs are summed
  in one sublayer (the counterpart of concatenation: each encoder attended on its own);
- ``flat``: one multi-head attention over the states of all encoders laid end to end, with encoder-specific
  key and value maps and shared queries: one distribution per head over every encoder's states (Eq. 6-7);
- ``hierarchical``: a multi-head attention per encoder, then the attention of Eq. 8-10 over their outputs at
  each position, β^(k) = softmax_k v_b^T tanh(W_b x + U_b^(k) c^(k)), output Σ_k β^(k) U_c^(k) c^(k).

With ``encoder_dropout`` (training only, as multi-source's) a sentence may hide an encoder: its memory mask has no
visible state. Flat then spreads its attention over the other encoders' states, hierarchical its β over the other
encoders; serial and parallel add nothing from it (its attention output is zero).

The first input is encoded by the Transformer's own embeddings and encoder (so ``--init-from`` a
``transformer`` checkpoint warm-starts them, the target embeddings and the decoder's self-attention); each further
text input has an encoder stack of its own, an image's features a projection to d_model. Attention files get
``source`` (first input), ``source.NAME`` (the others) and, for flat and hierarchical, ``encoders``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Optional

import torch
from torch import nn

from nmtkit.config import Option
from nmtkit.data.batching import Batch
from nmtkit.data.streams import TOKENS, CorpusMeta
from nmtkit.data.vocab import PAD, Vocab
from nmtkit.models.combination import JointAttention
from nmtkit.models.encoder import FeatureEncoder
from nmtkit.models.multi_source import OPTIONS as RNN_MULTI_OPTIONS
from nmtkit.models.multi_source import (
    chosen_streams,
    combination_groups,
    encoder_statistics,
    hidden_encoders,
    sources_uses,
)
from nmtkit.models.multihead import MultiHeadAttention
from nmtkit.models.registry import option_values, register_model
from nmtkit.models.seq2seq import AttentionWeights, ModelOutput, Paths
from nmtkit.models.state import DecoderState
from nmtkit.models.transformer import (
    TRANSFORMER_OPTIONS,
    DecoderLayer,
    EncoderLayer,
    Transformer,
    Weights,
    check_shared_vocabulary,
)

STRATEGIES = ("serial", "parallel", "flat", "hierarchical")
_SHARED = {o.name: o for o in RNN_MULTI_OPTIONS}
OPTIONS = TRANSFORMER_OPTIONS + [
    _SHARED["encoders"],
    Option("combination", "serial", "how the decoder's memory attention combines the encoders: serial (a sublayer "
           "per encoder, Marian's dual-source), parallel (outputs summed), flat (one attention over all encoders' "
           "states) or hierarchical (attention over the per-encoder outputs, Eq. 8-10)", choices=STRATEGIES),
    _SHARED["feature_norm"],
    replace(_SHARED["normalise_contexts"], help="layer-normalise each encoder's attention output before the "
            "attention over them (--combination hierarchical alone, before Eq. 8-10), so that an encoder with larger "
            "outputs does not weigh more for that alone; not in the paper"),
    _SHARED["encoder_dropout"],
]


class SourcesAttention(nn.Module):
    """The memory attention of a multi-source decoder layer over the encoders ``names`` (see the module); ``hides``:
    sentences may hide encoders in training (``encoder_dropout``)."""

    def __init__(self, names: tuple[str, ...], strategy: str, d_model: int, heads: int, dropout: float,
                 normalise: bool = False, hides: bool = False):
        super().__init__()
        self.names, self.strategy, self.heads, self.hides = names, strategy, heads, hides
        if strategy == "flat":
            self.joint = MultiHeadAttention(d_model, heads, dropout, self_attention=False, memory_kv=False)
            self.kv = nn.ModuleDict({n: nn.Linear(d_model, 2 * d_model) for n in names})
        else:
            self.attentions = nn.ModuleDict({n: MultiHeadAttention(d_model, heads, dropout, self_attention=False)
                                             for n in names})
        if strategy == "hierarchical":
            self.combination = JointAttention(d_model, {n: d_model for n in names}, d_model, False, 0)
        # normalise_contexts: each encoder's attention output layer-normalised before Eq. 8-10 (as multi-source's)
        self.norms = nn.ModuleDict({n: nn.LayerNorm(d_model) for n in names}) if normalise else None

    def keys_values(self, memories: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """Keys and values of each encoder's states ``[B, S_k, d]`` (those of all encoders end to end: flat)."""
        if self.strategy == "flat":
            ks, vs = zip(*(self.joint.keys_values(memories[n], self.kv[n]) for n in self.names))
            return torch.cat(ks, 2), torch.cat(vs, 2)
        return tuple(t for n in self.names for t in self.attentions[n].keys_values(memories[n]))

    def attend(self, i: int, x: torch.Tensor, memory: tuple[torch.Tensor, ...], masks: tuple[torch.Tensor, ...],
               weights: bool, head: Optional[int]) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Encoder ``i``'s multi-head attention from ``x``; in training, zero (output and weights) for the sentences
        that hide the encoder (a mask with no visible state: ``encoder_dropout``)."""
        attention, keys_values = self.attentions[self.names[i]], memory[2 * i:2 * i + 2]
        if not (self.training and self.hides):
            return attention.attend_memory(x, keys_values, masks[i], weights, head)
        present = masks[i].any(-1)  # [B, 1, 1]; a hidden encoder is attended as if all visible, then dropped
        a, w = attention.attend_memory(x, keys_values, masks[i] | ~present.unsqueeze(-1), weights, head)
        return a * present, None if w is None else w * present

    def present(self, masks: tuple[torch.Tensor, ...]) -> Optional[torch.Tensor]:
        """In training with ``hides``, ``[B, 1, K]``: whether each sentence has each encoder (see :meth:`attend`);
        else None."""
        return torch.cat([m.any(-1) for m in masks], -1) if self.training and self.hides else None


def _named(names: tuple[str, ...], weights: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """Per-encoder weights by their attention-file names: ``source`` for the first input, ``source.NAME`` after."""
    return {("source" if i == 0 else f"source.{n}"): w for i, (n, w) in enumerate(zip(names, weights))}


class MultiSourceDecoderLayer(DecoderLayer):
    """A decoder layer whose memory attention reads several encoders (:class:`SourcesAttention`)."""

    def __init__(self, names: tuple[str, ...], strategy: str, d_model: int, heads: int, ffn_size: int, dropout: float,
                 attention_dropout: float, activation_dropout: float, pre_norm: bool, normalise: bool = False,
                 hides: bool = False):
        attention = SourcesAttention(names, strategy, d_model, heads, attention_dropout, normalise, hides)
        super().__init__(d_model, heads, ffn_size, dropout, attention_dropout, activation_dropout, pre_norm,
                         memory_attention=attention, memory_sublayers=len(names) if strategy == "serial" else 1)
        self.sources = attention
        self.memory_tensors = 2 if strategy == "flat" else 2 * len(names)
        self.memory_masks = len(names)

    def cross(self, y: torch.Tensor, memory: tuple[torch.Tensor, ...], masks: tuple[torch.Tensor, ...],
              weights: bool, head: Optional[int]) -> tuple[torch.Tensor, Optional[Weights]]:
        sub, att, names = self.sub, self.sources, self.sources.names
        if att.strategy == "serial":
            per_encoder = []
            for i in range(len(names)):
                a, w = att.attend(i, sub.before(1 + i, y), memory, masks, weights, head)
                y = sub.after(1 + i, y, a)
                per_encoder.append(w)
            return y, _named(names, per_encoder) if weights else None
        x = sub.before(1, y)
        if att.strategy == "flat":
            a, w = att.joint.attend_memory(x, memory, torch.cat(masks, -1), weights, head)
            if w is None:
                return sub.after(1, y, a), None
            split = list(w.split([m.size(-1) for m in masks], -1))
            return sub.after(1, y, a), {**_named(names, split), "encoders": torch.stack([p.sum(-1) for p in split], -1)}
        outs = [att.attend(i, x, memory, masks, weights, head) for i in range(len(names))]
        found = _named(names, [w for _, w in outs]) if weights else None
        if att.strategy == "parallel":
            return sub.after(1, y, torch.stack([a for a, _ in outs]).sum(0)), found
        contexts = {n: c if att.norms is None else att.norms[n](c) for n, (c, _) in zip(names, outs)}
        a, beta = att.combination.combine(x, contexts, att.present(masks))
        return sub.after(1, y, a), None if found is None else {**found, "encoders": beta}


class TextStack(nn.Module):
    """A further text input's embeddings and encoder layers (and the final normalisation with pre-norm)."""

    def __init__(self, vocab: int, layers: int, layer_args: tuple):
        super().__init__()
        d_model, pre_norm = layer_args[0], layer_args[-1]
        self.emb = nn.Embedding(vocab, d_model, padding_idx=PAD)
        self.layers = nn.ModuleList(EncoderLayer(*layer_args) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model) if pre_norm else nn.Identity()


class MultiSourceTransformer(Transformer):
    diagnostics_read_weights = True

    def __init__(self, streams: Mapping[str, tuple[str, int]], tgt_vocab: int, combination: str = "serial",
                 feature_norm: bool = True, normalise_contexts: bool = False, encoder_dropout: float = 0.0,
                 **options):
        """``streams``: input name -> (kind, vocabulary size or feature size), in order; the first is text."""
        names = tuple(streams)
        if combination not in STRATEGIES:
            raise ValueError(f"unknown combination {combination!r} (known: {', '.join(STRATEGIES)})")
        if streams[names[0]][0] != TOKENS:
            raise ValueError("the first of --encoders must be a text input (the Transformer's own encoder)")
        if normalise_contexts and combination != "hierarchical":
            raise ValueError(f"--normalise-contexts normalises hierarchical's per-encoder contexts; --combination "
                             f"{combination} attends over none")
        # plain values, read while Transformer builds the decoder
        self.strategy, self.inputs, self.normalise = combination, names, normalise_contexts
        self.encoder_dropout = encoder_dropout
        super().__init__(streams[names[0]][1], tgt_vocab, **options)
        layers = len(self.encoder)
        self.extra = nn.ModuleDict({
            n: TextStack(size, layers, self.layer_args) if kind == TOKENS
            else FeatureEncoder(size, self.d_model, options.get("dropout", 0.1), feature_norm)
            for n, (kind, size) in list(streams.items())[1:]})
        if combination in ("flat", "hierarchical"):
            self.attention_labels = {"encoders": names}
        # flat attends over every encoder's positions in turn, one memory that a merged state would pad at its end
        self.merges_states = combination != "flat"
        self._init_parameters(self.tie)

    def decoder_layer(self, *layer_args) -> DecoderLayer:
        return MultiSourceDecoderLayer(self.inputs, self.strategy, *layer_args, normalise=self.normalise,
                                       hides=self.encoder_dropout > 0 and len(self.inputs) > 1)

    def memory(self, batch: Batch) -> tuple[dict[str, torch.Tensor], tuple[torch.Tensor, ...]]:
        """Every encoder's states ``[B, S_k, d]`` by name and their masks ``[B, 1, 1, S_k]``, in order; in training
        with ``encoder_dropout``, a sentence's mask of an encoder it hides is all False."""
        h, mask = self._encode(batch)
        memories, masks = {self.inputs[0]: h}, [mask]
        for name, encoder in self.extra.items():
            if isinstance(encoder, TextStack):
                memories[name], m = self._run_encoder(encoder.emb, encoder.layers, encoder.norm, batch[name])
            else:
                memories[name], features_mask, _ = encoder.encode(batch[name])
                m = features_mask[:, None, None, :]
            masks.append(m)
        if self.training and self.encoder_dropout > 0 and len(masks) > 1:
            present = hidden_encoders(h.size(0), len(masks), self.encoder_dropout, h.device)
            masks = [m & present[:, k, None, None, None] for k, m in enumerate(masks)]
        return memories, tuple(masks)

    def attention(self, w: Optional[Weights], sources: int) -> AttentionWeights:
        return dict(w) if isinstance(w, dict) else {}

    def forward(self, batch: Batch) -> ModelOutput:
        """The teacher-forced pass, keeping the encoders' states (``memory.NAME``, ``mask.NAME [B, S]``) in its
        ``state`` for :meth:`diagnostics`."""
        memories, masks = self.memory(batch)
        out = self.teacher_forced(batch, memories, masks)
        out.state = DecoderState({**{f"memory.{n}": memories[n] for n in self.inputs},
                                  **{f"mask.{n}": m[:, 0, 0] for n, m in zip(self.inputs, masks)}})
        return out

    def gradient_groups(self) -> dict[str, Paths]:
        """Each encoder (``encoder.K``: the first's embeddings and stack, a further one's :class:`TextStack` or
        feature projection); each encoder's memory attention in every decoder layer (``attention.K``; flat: its
        key and value map ``kv.K``, and the shared queries and output ``joint``), hierarchical's combination
        (``energy.K``, ``value.K``, ``query``, ``scorer``, Eq. 8-10); the decoder's self-attention, feed-forward
        blocks and normalisations; the target embeddings and the output layer (when not tied)."""
        layer = "decoder.layers.*"
        sources = f"{layer}.memory_attention"
        groups: dict[str, Paths] = {f"encoder.{self.inputs[0]}": ("src_emb", "encoder", "enc_norm"),
                                    **{f"encoder.{n}": f"extra.{n}" for n in self.extra}}
        if self.strategy == "flat":
            groups.update({f"kv.{n}": f"{sources}.kv.{n}" for n in self.inputs}, joint=f"{sources}.joint")
        else:
            groups.update({f"attention.{n}": f"{sources}.attentions.{n}" for n in self.inputs})
        if self.strategy == "hierarchical":
            first = self.decoder.layers[0]
            assert isinstance(first, MultiSourceDecoderLayer)
            groups.update(combination_groups(first.sources.combination, f"{sources}.combination"))
        groups.update(self_attention=f"{layer}.self_attention", ffn=f"{layer}.ffn",
                      norms=(f"{layer}.sub", "decoder.norm"), target_embeddings="tgt_emb", output="output")
        return groups

    def diagnostics(self, batch: Batch, output: ModelOutput) -> dict[str, float]:
        """:func:`~nmtkit.models.multi_source.encoder_statistics` of the pass, from the memory attention of the last
        decoder layer, averaged over its heads (none if the pass computed no weights: the trainer asks for them on
        the batches it diagnoses)."""
        if not output.attention or output.state is None:
            return {}
        return encoder_statistics(batch, output.attention, self.inputs, output.state, self.inputs)


@register_model("multi-source-transformer", OPTIONS, "the Transformer with several encoders (text, image features); "
                "serial, parallel, flat or hierarchical memory attention (multi-source-attention.txt carried over)",
                sources_uses)
def build(config: dict, meta: CorpusMeta, vocabs: Mapping[str, Vocab]) -> MultiSourceTransformer:
    values = option_values(config, OPTIONS)
    streams = chosen_streams(config, meta)
    check_shared_vocabulary(config, vocabs.get(next(iter(streams))), vocabs.get("tgt"))  # (the first encoder's)
    return MultiSourceTransformer(streams, meta.target.size, **{k: v for k, v in values.items() if k != "encoders"})
