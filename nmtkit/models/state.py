"""Incremental decoding state, kept apart from the model weights."""
from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

import torch
from torch.nn import functional as F

#: the state tensor holding, per row, the first target position that is its own (``[B]``, long): rows of a state
#: merged from states at different steps (:meth:`DecoderState.merged`) have their growing tensors padded on the left
START = "target_start"


class DecoderState:
    """Named batch-first tensors that a decoder carries from one step to the next.

    It holds everything incremental: the encoder memory and its precomputed keys, RNN
    hidden states, a growing target memory, key/value caches. Every tensor has the batch
    (sentences × beams) as dimension 0, so :meth:`reorder` serves all models.

    Tensors named in ``static`` depend only on the source sentence (encoder memory, keys,
    masks): all beams of a sentence hold the same rows, so a reorder that keeps every row
    within its sentence (a beam step) leaves them alone instead of copying them.

    Tensors named in ``grows`` gain one position per step along their second-last dimension (a target memory
    ``[B, T, H]``, key/value caches ``[B, heads, T, d_head]``): what :meth:`merged` pads on the left, where every
    other tensor is padded on the right (source positions, whose masks are True at real positions).

    ``beams`` > 1: the rows come in consecutive groups of that many, each one sentence's (a beam search's
    hypotheses), so a decoder may read a static tensor once per sentence (``t[::beams]``) instead of once per row.
    The search that lays rows out so says it as it reorders them (:meth:`reorder`'s ``beams``); :meth:`replace`
    keeps it, a wrapper that builds its model's state anew passes it on, and a state built otherwise has 1.
    """

    __slots__ = ("tensors", "static", "grows", "beams")

    def __init__(self, tensors: Mapping[str, torch.Tensor], static: Iterable[str] = (), grows: Iterable[str] = (),
                 beams: int = 1):
        self.tensors = dict(tensors)
        self.static = frozenset(static)
        self.grows = frozenset(grows)
        self.beams = beams

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def replace(self, **updates: torch.Tensor) -> "DecoderState":
        """A new state with some tensors replaced or added."""
        return DecoderState({**self.tensors, **updates}, self.static, self.grows, self.beams)

    def reorder(self, index: torch.Tensor, within_sentences: bool = False, beams: int = 1) -> "DecoderState":
        """Select rows ``index`` of every tensor: follow beam back-pointers, drop finished sentences.

        With ``within_sentences`` the caller promises that every row moves to a row of the
        same sentence, so static tensors are kept as they are; with ``beams``, that the new rows come in
        consecutive groups of that many per sentence (see the class).
        """
        return DecoderState({k: v if within_sentences and k in self.static else v.index_select(0, index)
                             for k, v in self.tensors.items()}, self.static, self.grows, beams)

    @staticmethod
    def merged(states: Sequence["DecoderState"]) -> "DecoderState":
        """One state of the rows of ``states`` in turn, which may be at different steps and have inputs of different
        lengths (continuous batching): tensors that grow with steps are padded on the left to the longest, and
        :data:`START` records where each row's own positions begin; every other tensor is padded with zeros on the
        right (past a shorter input's end, where its mask is False). A decoder with growing tensors masks the
        positions before ``START`` (:func:`target_mask`). Positions that no row owns any more are dropped."""
        first = states[0]
        names = set(first.tensors) - {START}
        if any(set(s.tensors) - {START} != names or s.grows != first.grows for s in states):
            raise ValueError("states of different decoders do not merge")
        if first.grows:
            states = [s.trimmed() for s in states]
        grown = [next((s[n].size(-2) for n in sorted(s.grows)), 0) for s in states]
        steps = max(grown)
        tensors = {START: torch.cat([s.starts() + (steps - g) for s, g in zip(states, grown)])} if first.grows else {}
        for name in names:
            parts = [s[name] for s in states]
            sizes = [max(p.size(d) for p in parts) for d in range(parts[0].dim())]
            padded = []
            for p in parts:
                pad: list[int] = []
                for d in reversed(range(1, p.dim())):  # (F.pad's order: the last dimension first)
                    short = sizes[d] - p.size(d)
                    pad += [short, 0] if name in first.grows and d == p.dim() - 2 else [0, short]
                padded.append(F.pad(p, pad) if any(pad) else p)
            tensors[name] = torch.cat(padded)
        beams = first.beams if all(s.beams == first.beams for s in states) else 1
        return DecoderState(tensors, first.static, first.grows, beams)

    def starts(self) -> torch.Tensor:
        """Each row's :data:`START` (zeros for a state never merged)."""
        if START in self:
            return self[START]
        some = next(iter(self.tensors.values()))
        return torch.zeros(self.batch_size, dtype=torch.long, device=some.device)

    def trimmed(self) -> "DecoderState":
        """The state without the leading positions of its growing tensors that no row owns (one read from the
        device)."""
        if START not in self or not self[START].numel():
            return self
        unused = int(self[START].min())
        if not unused:
            return self
        return DecoderState({**{n: t[..., unused:, :] if n in self.grows else t for n, t in self.tensors.items()},
                             START: self[START] - unused}, self.static, self.grows, self.beams)

    @property
    def batch_size(self) -> int:
        return next(iter(self.tensors.values())).size(0)


def target_mask(state: DecoderState, steps: int) -> Optional[torch.Tensor]:
    """``[B, steps]``, True at each row's own positions of a growing tensor ``steps`` long (None where every row's
    are all: a state never merged)."""
    if START not in state:
        return None
    return torch.arange(steps, device=state[START].device) >= state[START].unsqueeze(1)
