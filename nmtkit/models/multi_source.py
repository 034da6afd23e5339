"""``multi-source``: one RNN decoder attending to several encoders (multi-source-attention.txt §3-4).

Every input stream of the corpus (or those named by ``encoders``) gets an encoder: a text stream a
bidirectional GRU over its own embeddings (h^(k)_j: the two directions' states), a feature stream (an image's
196 × 512 CNN features) a linear projection of each feature vector (after a LayerNorm, as in
``show-attend-tell``). The decoder is RNNSearch's (:class:`~nmtkit.models.rnn_decoder.RNNDecoder`: a GRU, or
the conditional GRU of the paper's multimodal systems, and the deep output), whose attention is a
:mod:`~nmtkit.models.combination` of the encoders' attention: concat, flat or hierarchical, with or without
the sentinel and shared projections (Table 1's configurations). s_0 = tanh(W_s [mean_j h^(1)_j; ...; mean_j h^(N)_j]).

The attention the decoder reports: ``source`` over the first input's states, ``source.NAME`` over each
further input's, and (flat, hierarchical) ``encoders``, the weight of each encoder and of the sentinel
(Fig. 2), whose columns ``attention_labels['encoders']`` names.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import torch
from torch import nn

from nmtkit.config import PROBABILITY, Option
from nmtkit.data.batching import Batch
from nmtkit.data.streams import TOKENS, CorpusMeta
from nmtkit.data.vocab import PAD, Vocab
from nmtkit.errors import NmtkitError
from nmtkit.models.combination import STRATEGIES, Combination, Sentinel, make_combination
from nmtkit.models.encoder import FeatureEncoder, TextEncoder
from nmtkit.models.registry import option_values, register_model
from nmtkit.models.rnn_decoder import RNNDecoder, RNNDecoding
from nmtkit.models.rnn_options import check_tied_readout
from nmtkit.models.rnnsearch import RNN_OPTIONS
from nmtkit.models.seq2seq import AttentionWeights, ModelOutput, Paths
from nmtkit.models.state import DecoderState

PRESENT = "present"  #: the state's ``[B, N]`` flags of the encoders each sentence has (training with encoder_dropout)

OPTIONS = RNN_OPTIONS + [
    Option("encoders", "", "the input streams to encode, comma-separated, in order (default: all the corpus' "
                           "inputs; one of them gives a single-source baseline with the same decoder)"),
    Option("combination", "hierarchical", "how the decoder combines the encoders' attention: concat (context "
           "vectors concatenated), flat (one distribution over all encoders' states, Eq. 6-7) or hierarchical "
           "(a context per encoder, then attention over them, Eq. 8-10)", choices=STRATEGIES),
    Option("sentinel", False, "flat/hierarchical: the sentinel gate (Eq. 4-5), one more item to attend to"),
    Option("share_projections", False, "flat/hierarchical: one projection per encoder for energies and contexts "
                                       "(U_c = U_a, U_c = U_b)"),
    Option("feature_norm", True, "normalise each image feature vector (LayerNorm) before its projection"),
    Option("bounded_features", False, "pass the image's projected features through tanh, so that its states lie in "
                                      "(-1, 1) like the text encoders' GRU states"),
    Option("balance_encoders", False, "flat: divide each encoder's weights by its number of states in the joint "
                                      "softmax, so that an encoder gets no more attention for having more states (an "
                                      "image's cells beside a few words); not in the paper"),
    Option("encoder_dropout", 0.0, "training: the probability that a sentence hides one of its encoders, chosen at "
                                   "random, from the decoder (its attention and s_0), so that attention over the "
                                   "encoders cannot settle on one alone; not in the paper", allows=PROBABILITY,
           training_only=True),
    Option("normalise_contexts", False, "layer-normalise each encoder before the joint attention (hierarchical: its "
                                        "context, before Eq. 8-10; flat: its states, before Eq. 6-7), so that an "
                                        "encoder with larger states does not weigh more for that alone; not in the "
                                        "paper"),
]


class MultiSourceDecoder(RNNDecoder):
    """:class:`RNNDecoder` whose source attention is a :class:`Combination` over the memories ``memory.NAME`` /
    ``mask.NAME`` of the state, and whose s_0 reads every encoder's mean state."""

    def __init__(self, emb_size: int, sizes: Mapping[str, int], dec_size: int, att_size: int, readout_size: int,
                 tgt_vocab: int, dropout: float, cell: str, combination: str, share: bool, sentinel: bool,
                 balance: bool = False, normalise: bool = False):
        attention = make_combination(combination, dec_size, sizes, att_size, share, dec_size if sentinel else 0,
                                     balance, normalise)
        super().__init__(emb_size, attention.context_size, dec_size, att_size, readout_size, tgt_vocab, dropout,
                         cell, attention=attention, summary_size=sum(sizes.values()))
        self.sentinel = Sentinel(emb_size, dec_size) if sentinel else None
        self.combination: Combination = attention

    def summary(self, state: DecoderState) -> torch.Tensor:
        """[mean_j h^(1)_j; ...; mean_j h^(N)_j] over the real positions (zero for an encoder a sentence hides)."""
        means = []
        for k, name in enumerate(self.combination.names):
            memory, mask = state[f"memory.{name}"], state[f"mask.{name}"].to(state[f"memory.{name}"].dtype)
            mean = (memory * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
            means.append(mean if PRESENT not in state else mean * state[PRESENT][:, k:k + 1].to(mean.dtype))
        return torch.cat(means, -1)

    def source_keys(self, state: DecoderState) -> dict[str, torch.Tensor]:
        return self.combination.start(lambda name: state[name], state[PRESENT] if PRESENT in state else None)

    def attend_sources(self, s: torch.Tensor, query: Optional[torch.Tensor], emb: torch.Tensor,
                       state: DecoderState) -> tuple[torch.Tensor, AttentionWeights]:
        # (what the combination reads is static: one row per sentence, which a beam's rows read together)
        get = lambda name: state.per_sentence(self._name(name) if self._name(name) in state else name)
        sentinel = None if self.sentinel is None else self.sentinel(emb, self._get(state, "hidden"), s)  # Eq. 4
        context, per_encoder, over = self.combination(s, get, sentinel, state[PRESENT] if PRESENT in state else None)
        first, *rest = self.combination.names
        weights = {"source": per_encoder[first], **{f"source.{name}": per_encoder[name] for name in rest}}
        if over is not None:
            weights["encoders"] = over
        return context, weights


class MultiSource(RNNDecoding):
    """Several encoders (text or image features), one attentive RNN decoder over their combined attention."""

    def __init__(self, streams: Mapping[str, tuple[str, int]], tgt_vocab: int, emb_size: int = 256,
                 enc_size: int = 256, dec_size: int = 512, att_size: int = 0, readout_size: int = 0,
                 dropout: float = 0.2, tie_embeddings: bool = False, param_init: float = 0.1,
                 decoder_cell: str = "gru", combination: str = "hierarchical", sentinel: bool = False,
                 share_projections: bool = False, feature_norm: bool = True, bounded_features: bool = False,
                 balance_encoders: bool = False, normalise_contexts: bool = False, encoder_dropout: float = 0.0):
        """``streams``: input name -> (kind, vocabulary size or feature size), in the encoders' order."""
        super().__init__()
        self.encoder_dropout = encoder_dropout
        readout_size = readout_size or emb_size
        check_tied_readout(tie_embeddings, readout_size, emb_size)
        self.inputs = tuple(streams)
        texts = [name for name, (kind, _) in streams.items() if kind == TOKENS]
        if not texts:
            raise ValueError("multi-source needs a text input (for images alone: show-attend-tell)")
        self.encoders = nn.ModuleDict({
            name: TextEncoder(size, emb_size, enc_size, dropout=dropout) if kind == TOKENS
            else FeatureEncoder(size, 2 * enc_size, dropout, feature_norm, bounded_features)
            for name, (kind, size) in streams.items()})
        self.tgt_emb = nn.Embedding(tgt_vocab, emb_size, padding_idx=PAD)
        sizes = {name: e.output_size for name, e in self.encoders.items()}
        self.decoder = MultiSourceDecoder(emb_size, sizes, dec_size, att_size or dec_size, readout_size, tgt_vocab,
                                          dropout, decoder_cell, combination, share_projections, sentinel,
                                          balance_encoders, normalise_contexts)
        if combination != "concat":
            self.attention_labels = {"encoders": self.decoder.combination.labels}
        # flat attends over every encoder's positions in turn, one memory that a merged state would pad at its end
        self.merges_states = combination != "flat"
        self.dropout = nn.Dropout(dropout)
        self.init_parameters(param_init, [(self.decoder.readout.output, self.tgt_emb)] if tie_embeddings else ())
        for module in self.modules():  # a LayerNorm (image features, hierarchical's contexts) starts as the identity
            if isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def encode(self, batch: Batch) -> DecoderState:
        tensors = {}
        for name, encoder in self.encoders.items():
            tensors[f"memory.{name}"], tensors[f"mask.{name}"], _ = encoder.encode(batch[name])
        if self.training and self.encoder_dropout > 0 and len(self.encoders) > 1:
            tensors[PRESENT] = hidden_encoders(batch.size, len(self.encoders), self.encoder_dropout, batch.device)
        return self.decoder.start(DecoderState(tensors, static=tensors, shared=[n for n in tensors if n != PRESENT]))

    def gradient_groups(self) -> dict[str, Paths]:
        """Each encoder, each per-encoder projection and attention of the combination (``energy.K``: U_a^(k) or
        U_b^(k); ``value.K``: U_c^(k); ``attention.K``: hierarchical's and concat's Eq. 1-3), the shared W and v of
        the energies (``query``, ``scorer``), the sentinel gate, s_0's map, the decoder cell, the deep output and the
        target embeddings."""
        combination = self.decoder.combination
        path = next(name for name, module in self.named_modules() if module is combination)
        return {**{f"encoder.{name}": f"encoders.{name}" for name in self.inputs}, **combination_groups(combination, path),
                "sentinel_gate": "decoder.sentinel", "init_state": "decoder.init_state", "cell": "decoder.cell",
                "readout": "decoder.readout", "target_embeddings": "tgt_emb"}

    def diagnostics(self, batch: Batch, output: ModelOutput) -> dict[str, float]:
        """:func:`encoder_statistics` of the pass, from the states it encoded (``output.state``)."""
        state = output.state if output.state is not None else self.encode(batch)
        combination = self.decoder.combination
        return encoder_statistics(batch, output.attention, combination.labels, state, combination.names)


def hidden_encoders(sentences: int, encoders: int, p: float, device: torch.device) -> torch.Tensor:
    """``present [sentences, encoders]``: with probability ``p`` a sentence hides one of its encoders, chosen
    uniformly (False there); every other entry True."""
    hide = torch.rand(sentences, device=device) < p
    which = torch.randint(encoders, (sentences,), device=device)
    return ~(hide.unsqueeze(1) & (torch.arange(encoders, device=device) == which.unsqueeze(1)))


def combination_groups(combination: nn.Module, path: str) -> dict[str, Paths]:
    """The gradient groups of a combination of encoders at module ``path``: its per-encoder projections
    (``energy.K``, ``value.K``) and attentions (``attention.K``), and the shared W and v of its energies (``query``,
    ``scorer``), those it has."""
    groups: dict[str, Paths] = {}
    for kind, label in (("energy", "energy"), ("value", "value"), ("attentions", "attention")):
        per_item = getattr(combination, kind, None)
        if isinstance(per_item, nn.ModuleDict):
            groups.update({f"{label}.{name}": f"{path}.{kind}.{name}" for name in per_item})
    for kind, label in (("query", "query"), ("v", "scorer")):
        if isinstance(getattr(combination, kind, None), nn.Module):
            groups[label] = f"{path}.{kind}"
    return groups


def encoder_statistics(batch: Batch, attention: AttentionWeights, labels: tuple[str, ...], state: DecoderState,
                       names: Sequence[str]) -> dict[str, float]:
    """Means over the batch's real target positions of: ``mass.K``, the weight of encoder (or sentinel) K in the
    distribution over encoders (``attention['encoders']``, columns ``labels``; flat: the sum of its states' weights,
    Eq. 6; hierarchical: β^(k), Eq. 9), if the model gives one; ``context.K``, the norm of Σ_j α^(k)_j h^(k)_j,
    encoder K's states weighted by its attention (``source`` for the first, ``source.K`` after; flat: scaled by its
    mass); and ``states.K``, the mean norm of encoder K's states h^(k)_j (the scale each encoder brings).
    ``state``: each encoder's states ``memory.K [B, S_k, d]`` and mask ``mask.K [B, S_k]`` (True: a real position),
    for the encoders ``names`` in order."""
    real = batch.tgt_out != PAD
    stats = {}
    over = attention.get("encoders")
    if over is not None:
        for k, label in enumerate(labels):
            stats[f"mass.{label}"] = float(over[..., k][real].float().mean())
    for k, name in enumerate(names):
        memory, mask = state[f"memory.{name}"], state[f"mask.{name}"]
        weights = attention["source" if k == 0 else f"source.{name}"].float()  # [B, T, S_k]
        stats[f"context.{name}"] = float(torch.bmm(weights, memory.float()).norm(dim=-1)[real].mean())
        stats[f"states.{name}"] = float(memory.float().norm(dim=-1)[mask].mean())
    return {key: round(value, 6) for key, value in stats.items()}


def chosen_streams(config: Mapping, meta: CorpusMeta) -> dict[str, tuple[str, int]]:
    """The inputs ``encoders`` names (all the corpus' inputs by default), as name -> (kind, size)."""
    names = [n.strip() for n in config["encoders"].split(",") if n.strip()] or list(meta.inputs)
    unknown = [n for n in names if n not in meta.inputs]
    if unknown or len(set(names)) != len(names):
        raise NmtkitError(f"--encoders {config['encoders']!r}: name each input stream once, from: "
                          f"{', '.join(f'{n} ({s.kind})' for n, s in meta.inputs.items())}", exit_code=2)
    return {n: (meta.streams[n].kind, meta.streams[n].size) for n in names}


def sources_uses(config: Mapping, meta: CorpusMeta) -> list[tuple[str, bool, str]]:
    """The image options are read by a feature encoder, encoder dropout with more than one encoder, and balancing
    (flat's offsets of -log T_k) with more than one encoder or the sentinel: of multi-source and its Transformer."""
    streams = chosen_streams(config, meta)
    features = any(kind != TOKENS for kind, _ in streams.values())
    several = len(streams) > 1
    rules = [("feature_norm", features, "image features among --encoders"),
             ("bounded_features", features, "image features among --encoders"),
             ("encoder_dropout", several, "two or more --encoders"),
             ("balance_encoders", several or config.get("sentinel", False), "two or more --encoders, or --sentinel")]
    return [(name, used, goes_with) for name, used, goes_with in rules if name in config]


@register_model("multi-source", OPTIONS, "several encoders (text: BiGRU; image features: projection), one GRU or "
                "conditional-GRU decoder; concat, flat or hierarchical attention combination, optional sentinel "
                "(multi-source-attention.txt)", sources_uses)
def build(config: dict, meta: CorpusMeta, vocabs: Mapping[str, Vocab]) -> MultiSource:
    return MultiSource(chosen_streams(config, meta), meta.target.size, **{k: v for k, v in option_values(config, OPTIONS).items()
                                                     if k != "encoders"})
