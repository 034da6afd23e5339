"""Attention over several encoders from one RNN decoder state: multi-source-attention.txt §2-3.

A decoder state s attends to N encoders, encoder k with states h^(k)_1..h^(k)_{T_k} (sizes may differ).
Three ways to combine their attention, each a :class:`Combination`:

- :class:`ConcatCombination` (Zoph and Knight 2016; Firat et al. 2016): one attention per encoder (Eq. 1-3),
  the context vectors concatenated, c = [c^(1); ...; c^(N)].
- :class:`FlatCombination` (§3.1): one distribution jointly over the states of all encoders,
  e^(k)_j = v_a^T tanh(W_a s + U^(k)_a h^(k)_j) with v_a, W_a shared (Eq. 1, 6), and
  c = Σ_k Σ_j α^(k)_j U^(k)_c h^(k)_j (Eq. 7).
- :class:`HierarchicalCombination` (§3.2): a context c^(k) per encoder (Eq. 1-3), then a second attention
  over them, e^(k) = v_b^T tanh(W_b s + U^(k)_b c^(k)) (Eq. 8), β = softmax_k e^(k) (Eq. 9) and
  c = Σ_k β^(k) U^(k)_c c^(k) (Eq. 10).

Flat and hierarchical take two switches of Table 1: ``share`` (U_c = U_a, resp. U_c = U_b: one projection for
energies and contexts) and the sentinel (Eq. 4-5, after Lu et al. 2016): a vector ψ ⊙ s, ψ = σ(W_y y + W_s s_prev),
that joins the distribution as one more item with its own energy (projection U^(ψ)_a, resp. U^(ψ)_b) and whose
projection U^(ψ)_c enters the context; attending to it lets the decoder fall back on its own state. Their contexts
live in the projection space (``att_size``), concat's have the encoders' sizes added up.

A step may be told which encoders each sentence has (``present [B, N]``, training with ``encoder_dropout``): an
absent encoder's context is zero (concat), its states get no weight (flat), or it gets no β (hierarchical).

Each combination precomputes what depends only on the inputs once per sentence (:meth:`Combination.start`),
then gives, per decoder step, the context, each encoder's weights over its states, and (flat and hierarchical)
the distribution over the encoders and the sentinel, whose columns follow ``names`` (and ``sentinel``, last).
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, cast

import torch
from torch import nn

from nmtkit.models.attention import MLPAttention, additive_scores, masked_softmax

Tensors = dict[str, torch.Tensor]
#: ``get(name)``: a tensor of the decoding state: ``memory.K`` ``[B, T_K, D_K]`` and ``mask.K`` ``[B, T_K]`` of
#: encoder K, and the entries :meth:`Combination.start` gave.
Getter = Callable[[str], torch.Tensor]
#: (context ``[B, C]``, each encoder's weights ``[B, T_K]`` by name, weights over encoders (+ sentinel) ``[B, N(+1)]``
#: or None)
Combined = tuple[torch.Tensor, Tensors, Optional[torch.Tensor]]
SENTINEL = "sentinel"


class Sentinel(nn.Module):
    """The sentinel vector ψ ⊙ s with the gate ψ = σ(W_y y + W_s s_prev) (multi-source-attention.txt Eq. 4).

    ``y`` is the embedded previous output, ``s_prev`` the previous decoder state and ``s`` the state the
    attention reads (the same as ``s_prev`` for a decoder that attends before its transition, s'_j for a
    conditional GRU)."""

    def __init__(self, emb_size: int, state_size: int):
        super().__init__()
        self.input = nn.Linear(emb_size, state_size)  # W_y (with the bias)
        self.state = nn.Linear(state_size, state_size, bias=False)  # W_s

    def forward(self, y: torch.Tensor, s_prev: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.input(y) + self.state(s_prev)) * s


class Combination(nn.Module):
    """Attention of a decoder state over the encoders ``names`` (sizes ``sizes``); ``context_size`` wide."""

    context_size: int
    sentinel_size = 0

    def __init__(self, sizes: Mapping[str, int]):
        super().__init__()
        self.names = tuple(sizes)

    @property
    def labels(self) -> tuple[str, ...]:
        """The columns of the weights over encoders: the encoders, then the sentinel if there is one."""
        return self.names + ((SENTINEL,) if self.sentinel_size else ())

    def start(self, get: Getter, present: Optional[torch.Tensor] = None) -> Tensors:
        """What the steps need that depends on the inputs only (and on the encoders each sentence has,
        ``present [B, N]``), by state name."""
        raise NotImplementedError

    def forward(self, s: torch.Tensor, get: Getter, sentinel: Optional[torch.Tensor] = None,
                present: Optional[torch.Tensor] = None) -> Combined:
        """The combined context of a step from the decoder state ``s [B, H]`` (and the sentinel vector ``[B, H]``),
        over the encoders each sentence has (``present [B, N]``; None: all)."""
        raise NotImplementedError


class EncoderAttentions(nn.ModuleDict):
    """One attention (Eq. 1-3) per encoder, by name: the first level of concat and hierarchical."""

    def __init__(self, query_size: int, sizes: Mapping[str, int], att_size: int):
        super().__init__({name: MLPAttention(query_size, size, att_size) for name, size in sizes.items()})

    def attentions(self) -> dict[str, MLPAttention]:
        return {name: cast(MLPAttention, a) for name, a in self.items()}

    def start(self, get: Getter) -> Tensors:
        return {f"keys.{name}": a.keys(get(f"memory.{name}")) for name, a in self.attentions().items()}

    def contexts(self, s: torch.Tensor, get: Getter) -> tuple[Tensors, Tensors]:
        """c^(k) and α^(k) of every encoder, by name."""
        out = {name: a(s, get(f"keys.{name}"), get(f"memory.{name}"), get(f"mask.{name}"))
               for name, a in self.attentions().items()}
        return {name: c for name, (c, _) in out.items()}, {name: w for name, (_, w) in out.items()}


class ConcatCombination(Combination):
    """c = [c^(1); ...; c^(N)]: each encoder attended on its own, the combination left to the layers after."""

    def __init__(self, query_size: int, sizes: Mapping[str, int], att_size: int):
        super().__init__(sizes)
        self.attentions = EncoderAttentions(query_size, sizes, att_size)
        self.context_size = sum(sizes.values())

    def start(self, get: Getter, present: Optional[torch.Tensor] = None) -> Tensors:
        return self.attentions.start(get)

    def forward(self, s: torch.Tensor, get: Getter, sentinel: Optional[torch.Tensor] = None,
                present: Optional[torch.Tensor] = None) -> Combined:
        contexts, weights = self.attentions.contexts(s, get)
        if present is not None:
            contexts = {name: c * present[:, k:k + 1].to(c.dtype) for k, (name, c) in enumerate(contexts.items())}
        return torch.cat([contexts[name] for name in self.names], -1), weights, None


def _projections(sizes: Mapping[str, int], att_size: int, sentinel_size: int) -> nn.ModuleDict:
    """A map into the ``att_size`` space for every encoder (and the sentinel)."""
    sizes = {**sizes, **({SENTINEL: sentinel_size} if sentinel_size else {})}
    return nn.ModuleDict({name: nn.Linear(size, att_size) for name, size in sizes.items()})


class JointAttention(Combination):
    """What flat and hierarchical share: W s and v of the energies, U_a (U_b) per item, U_c per item unless shared;
    the attention over per-encoder contexts of Eq. 8-10 (:meth:`combine`), which the multi-source Transformer uses too."""

    def __init__(self, query_size: int, sizes: Mapping[str, int], att_size: int, share: bool, sentinel_size: int):
        super().__init__(sizes)
        self.sentinel_size, self.share, self.context_size = sentinel_size, share, att_size
        self.query = nn.Linear(query_size, att_size, bias=False)  # W_a (W_b)
        self.v = nn.Linear(att_size, 1, bias=False)  # v_a (v_b)
        self.energy = _projections(sizes, att_size, sentinel_size)  # U_a^(k) (U_b^(k)), and U^(ψ)
        self.value = None if share else _projections(sizes, att_size, sentinel_size)  # U_c^(k), U_c^(ψ)

    def project_value(self, name: str, x: torch.Tensor) -> torch.Tensor:
        """U_c x of item ``name`` (U_a x, resp. U_b x, when shared)."""
        return (self.energy if self.value is None else self.value)[name](x)

    def combine(self, s: torch.Tensor, contexts: Mapping[str, torch.Tensor],
                present: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ_k β^(k) U_c^(k) c^(k) and β (Eq. 8-10) for queries ``s [..., H]`` and contexts ``[..., D_k]`` by name
        (one decoder step ``[B, .]``, or all ``[B, T, .]``), over the items ``present [..., K]`` says (None: all)."""
        q = self.query(s).unsqueeze(-2)
        energies = torch.stack([self.energy[n](c) for n, c in contexts.items()], -2)  # U_b^(k) c^(k)  [..., K, A]
        beta = masked_softmax(additive_scores(energies + q, self.v), present)  # Eq. 8-9
        values = torch.stack([self.project_value(n, c) for n, c in contexts.items()], -2)  # U_c^(k) c^(k)
        return (beta.unsqueeze(-1) * values).sum(-2), beta  # Eq. 10


class FlatCombination(JointAttention):
    """One softmax over the states of every encoder and the sentinel (Eq. 6-7; the sentinel as Eq. 5).

    With ``balance`` (not in the paper), each encoder's weights are divided by its number of states T_k before the
    joint normalisation, α^(k)_j ∝ exp(e^(k)_j) / T_k (an energy offset of −log T_k): with equal energies every
    encoder, and the sentinel, gets the same mass, where the plain softmax gives each encoder mass in proportion to
    its length (an image's 49 or 196 cells beside a few words). With ``normalise`` (not in the paper), each
    encoder's states h^(k)_j are layer-normalised (its own gain and bias) before Eq. 6-7, as hierarchical's
    contexts are."""

    def __init__(self, query_size: int, sizes: Mapping[str, int], att_size: int, share: bool, sentinel_size: int,
                 balance: bool = False, normalise: bool = False):
        super().__init__(query_size, sizes, att_size, share, sentinel_size)
        self.balance = balance
        self.norms = nn.ModuleDict({name: nn.LayerNorm(size) for name, size in sizes.items()}) if normalise else None

    def start(self, get: Getter, present: Optional[torch.Tensor] = None) -> Tensors:
        """The energy keys U_a^(k) h^(k)_j and values U_c^(k) h^(k)_j of all encoders, laid end to end, and their
        mask, an absent encoder's states masked too (with ``balance``, each state's offset −log T_k too)."""
        masks = [get(f"mask.{n}") if present is None else get(f"mask.{n}") & present[:, k:k + 1]
                 for k, n in enumerate(self.names)]
        states = {n: get(f"memory.{n}") if self.norms is None else self.norms[n](get(f"memory.{n}")) for n in self.names}
        out = {"keys": torch.cat([self.energy[n](states[n]) for n in self.names], 1), "mask": torch.cat(masks, 1)}
        if self.value is not None:
            out["values"] = torch.cat([self.value[n](states[n]) for n in self.names], 1)
        if self.balance:
            out["offsets"] = torch.cat([-m.sum(1, keepdim=True).clamp(min=1).float().log().expand(m.shape)
                                        for m in masks], 1)
        return out

    def forward(self, s: torch.Tensor, get: Getter, sentinel: Optional[torch.Tensor] = None,
                present: Optional[torch.Tensor] = None) -> Combined:
        """As :meth:`Combination.forward`; ``s`` may have a multiple of the sentences' rows (of ``keys``), each
        consecutive group of them one sentence's, which read its states together (a beam's hypotheses)."""
        q = self.query(s)
        keys, mask = get("keys"), get("mask")  # (an absent encoder's states masked by start)
        sentences, rows, width = keys.size(0), q.size(0), keys.size(1)
        q = q.view(sentences, rows // sentences, 1, -1)  # [B, g, 1, A]: a sentence's rows
        scores = additive_scores(keys.unsqueeze(1) + q, self.v)  # e^(k)_ij + Σv, Eq. 1 with shared W_a, v_a  [B, g, S]
        if self.balance:
            scores = scores + get("offsets").unsqueeze(1).to(scores.dtype)
        mask = mask.unsqueeze(1).expand(scores.shape)
        if sentinel is not None:  # e^(ψ)_i, Eq. 5, one more column of the joint softmax
            psi = additive_scores(self.energy[SENTINEL](sentinel).view(q.shape) + q, self.v)  # [B, g, 1]
            scores, mask = torch.cat([scores, psi], -1), torch.cat([mask, mask.new_ones(psi.shape)], -1)
        alpha = masked_softmax(scores, mask)  # Eq. 6: sums to one over all encoders' states (and the sentinel)
        values = keys if self.value is None else get("values")
        context = torch.bmm(alpha[..., :width], values).view(rows, -1)  # Eq. 7
        alpha = alpha.view(rows, -1)
        states = alpha[:, :width]
        per_encoder = dict(zip(self.names, states.split([get(f"mask.{n}").size(1) for n in self.names], 1)))
        over = [w.sum(1, keepdim=True) for w in per_encoder.values()]
        if sentinel is not None:
            context = context + alpha[:, -1:] * self.project_value(SENTINEL, sentinel)
            over.append(alpha[:, -1:])
        return context, per_encoder, torch.cat(over, 1)


class HierarchicalCombination(JointAttention):
    """A context per encoder (Eq. 1-3), then an attention over them and the sentinel (Eq. 8-10).

    With ``normalise`` (not in the paper), each encoder's context c^(k) is layer-normalised (its own gain and bias)
    before Eq. 8-10, so that an encoder whose states are larger does not weigh more in the energies for that
    alone."""

    def __init__(self, query_size: int, sizes: Mapping[str, int], att_size: int, share: bool, sentinel_size: int,
                 normalise: bool = False):
        super().__init__(query_size, sizes, att_size, share, sentinel_size)
        self.attentions = EncoderAttentions(query_size, sizes, att_size)
        self.norms = nn.ModuleDict({name: nn.LayerNorm(size) for name, size in sizes.items()}) if normalise else None

    def start(self, get: Getter, present: Optional[torch.Tensor] = None) -> Tensors:
        return self.attentions.start(get)

    def forward(self, s: torch.Tensor, get: Getter, sentinel: Optional[torch.Tensor] = None,
                present: Optional[torch.Tensor] = None) -> Combined:
        contexts, weights = self.attentions.contexts(s, get)
        if self.norms is not None:
            contexts = {name: self.norms[name](c) for name, c in contexts.items()}
        if sentinel is not None:
            contexts[SENTINEL] = sentinel
            if present is not None:
                present = torch.cat([present, present.new_ones(present.size(0), 1)], 1)
        context, beta = self.combine(s, contexts, present)
        return context, weights, beta

STRATEGIES = ("concat", "flat", "hierarchical")


def make_combination(strategy: str, query_size: int, sizes: Mapping[str, int], att_size: int, share: bool = False,
                     sentinel_size: int = 0, balance: bool = False, normalise: bool = False) -> Combination:
    """The combination ``strategy`` of encoders of ``sizes`` for a ``query_size`` decoder state; ``sentinel_size``
    > 0 adds the sentinel (flat and hierarchical only, like ``share``); ``balance``: flat's weights divided by each
    encoder's length; ``normalise``: each encoder layer-normalised before the joint attention (hierarchical its
    context, flat its states)."""
    if balance and strategy != "flat":
        raise ValueError(f"--balance-encoders weighs the states of flat's joint softmax; --combination {strategy} has "
                         "none")
    if normalise and strategy == "concat":
        raise ValueError("--normalise-contexts normalises what flat and hierarchical attend over jointly; --combination "
                         "concat attends over each encoder apart")
    if strategy == "concat":
        if share or sentinel_size:
            raise ValueError("--combination concat has no shared projections and no sentinel (Table 1): "
                             "--share-projections and --sentinel go with flat or hierarchical")
        return ConcatCombination(query_size, sizes, att_size)
    if strategy == "flat":
        return FlatCombination(query_size, sizes, att_size, share, sentinel_size, balance, normalise)
    if strategy == "hierarchical":
        return HierarchicalCombination(query_size, sizes, att_size, share, sentinel_size, normalise)
    raise ValueError(f"unknown combination {strategy!r} (known: {', '.join(STRATEGIES)})")
