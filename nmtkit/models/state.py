"""Incremental decoding state, kept apart from the model weights."""
from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

import torch
from torch.nn import functional as F

#: the state tensor holding, per row, the first target position that is its own (``[B]``, long): rows of a state
#: merged from states at different steps (:meth:`DecoderState.merged`) have their growing tensors padded on the left
START = "target_start"
#: the state tensor holding, per row, the row of the growing tensors named in ``deferred`` that it is still to take
#: (``[B]``, long): recorded by :meth:`DecoderState.reorder` instead of copying them, and taken as the decoder
#: appends the next position (:meth:`DecoderState.grown`), one copy a step where there were two
PENDING = "target_rows"


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
    hypotheses), so a decoder may read a static tensor once per sentence (:meth:`per_sentence`) instead of once per
    row. The search that lays rows out so says it as it reorders them (:meth:`reorder`'s ``beams``); :meth:`replace`
    keeps it, a wrapper that builds its model's state anew passes it on, and a state built otherwise has 1.

    Static tensors named in ``shared`` are stored once per sentence: ``batch_size // beams`` rows, which the
    sentence's rows share (a Transformer's keys and values of its encoder's states), so that the beams neither copy
    them when a search starts, nor when sentences leave or join it. A decoder reads them with :meth:`per_sentence`.

    Growing tensors named in ``deferred`` are reordered by the decoder's next step, which takes each row's as it
    appends the step's position (:meth:`grown`, one copy where a reorder and an append were two): :meth:`reorder`
    records the rows (:data:`PENDING`) instead of copying them, and the step gives back its grown tensors
    (:meth:`stepped`). Only a decoder that reads them in no other way (a Transformer's self-attention caches)
    declares them; anything else reads a state's tensors as rows after :meth:`settled`.
    """

    __slots__ = ("tensors", "static", "grows", "beams", "shared", "deferred")

    def __init__(self, tensors: Mapping[str, torch.Tensor], static: Iterable[str] = (), grows: Iterable[str] = (),
                 beams: int = 1, shared: Iterable[str] = (), deferred: Iterable[str] = ()):
        self.tensors = dict(tensors)
        self.shared = frozenset(shared)
        self.static = frozenset(static) | self.shared
        self.grows = frozenset(grows)
        self.deferred = frozenset(deferred) & self.grows
        self.beams = beams

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def replace(self, **updates: torch.Tensor) -> "DecoderState":
        """A new state with some tensors replaced or added."""
        return self.like({**self.tensors, **updates})

    def like(self, tensors: Mapping[str, torch.Tensor], beams: Optional[int] = None,
             static: Optional[Iterable[str]] = None) -> "DecoderState":
        """A state of ``tensors`` whose names this one declares (static, growing, shared) as this one does, with
        ``beams`` and ``static`` if given (default: this one's)."""
        return DecoderState(tensors, self.static if static is None else static, self.grows,
                            self.beams if beams is None else beams, self.shared, self.deferred)

    def per_sentence(self, name: str) -> torch.Tensor:
        """Static tensor ``name`` with one row per sentence (of every ``beams`` rows, the first's)."""
        t = self.tensors[name]
        return t if name in self.shared else t[::self.beams]

    def reorder(self, index: torch.Tensor, within_sentences: bool = False, beams: int = 1) -> "DecoderState":
        """Select rows ``index`` of every tensor: follow beam back-pointers, drop finished sentences.

        With ``within_sentences`` the caller promises that every row moves to a row of the
        same sentence, so static tensors are kept as they are; with ``beams``, that the new rows come in
        consecutive groups of that many per sentence (see the class): a shared tensor's row of each group is its
        first row's sentence's. The ``deferred`` tensors keep their rows: the rows to take are recorded
        (:data:`PENDING`).
        """
        def moved(name: str, t: torch.Tensor) -> torch.Tensor:
            if name in self.shared:
                same = within_sentences and beams == self.beams
                return t if same else t.index_select(0, index[::beams] // self.beams)
            if name in self.deferred:
                return t
            return t if within_sentences and name in self.static else t.index_select(0, index)

        tensors = {name: moved(name, t) for name, t in self.tensors.items()}  # (PENDING's rows are moved too)
        if self.deferred and PENDING not in self.tensors:
            tensors[PENDING] = index
        return self.like(tensors, beams)

    def grown(self, name: str, new: torch.Tensor) -> torch.Tensor:
        """Growing tensor ``name`` of each row, ``new`` (``[B, ..., steps, d]``) appended along its second-last
        dimension: for a ``deferred`` one, its rows taken as :meth:`reorder` recorded, in the same copy (compiled,
        the gather and the append as one expression, which the compiler makes one loop)."""
        t, rows = self.tensors[name], self.tensors.get(PENDING)
        if rows is None or name not in self.deferred:
            return torch.cat([t, new], -2)
        if torch.compiler.is_compiling():
            return torch.cat([t.index_select(0, rows), new], -2)
        steps = t.size(-2)
        out = t.new_empty(rows.size(0), *t.shape[1:-2], steps + new.size(-2), t.size(-1))
        torch.index_select(t, 0, rows, out=out[..., :steps, :])
        out[..., steps:, :] = new
        return out

    def stepped(self, **updates: torch.Tensor) -> "DecoderState":
        """The state after a decoder's step: :meth:`replace` with ``updates``, every ``deferred`` tensor among them
        (:meth:`grown`: the recorded rows taken)."""
        if self.deferred - updates.keys():
            raise ValueError(f"a step gave back none of {sorted(self.deferred - updates.keys())}: their rows would be lost")
        tensors = {**self.tensors, **updates}
        tensors.pop(PENDING, None)  # (not a filtering loop: compiled, its order of names would be a guard)
        return self.like(tensors)

    def settled(self) -> "DecoderState":
        """The state with every tensor's rows its own: the rows :meth:`reorder` recorded for the ``deferred`` tensors
        taken (a copy), as code reading the tensors other than by :meth:`grown` needs them."""
        rows = self.tensors.get(PENDING)
        if rows is None:
            return self
        return self.like({n: t.index_select(0, rows) if n in self.deferred else t for n, t in self.tensors.items()
                          if n != PENDING})

    @staticmethod
    def merged(states: Sequence["DecoderState"]) -> "DecoderState":
        """One state of the rows of ``states`` in turn, which may be at different steps and have inputs of different
        lengths (continuous batching): tensors that grow with steps are padded on the left to the longest, and
        :data:`START` records where each row's own positions begin; every other tensor is padded with zeros on the
        right (past a shorter input's end, where its mask is False). A decoder with growing tensors masks the
        positions before ``START`` (:func:`target_mask`). Positions that no row owns any more are dropped."""
        states = [s.settled() for s in states]
        first = states[0]
        names = set(first.tensors) - {START}
        if any(set(s.tensors) - {START} != names or s.grows != first.grows or s.shared != first.shared for s in states):
            raise ValueError("states of different decoders do not merge")
        beams = first.beams
        if any(s.beams != beams for s in states):  # (rows grouped otherwise: shared tensors become a row's each)
            beams = 1
            states = [s.like({n: t.repeat_interleave(s.beams, 0) if n in s.shared else t for n, t in s.tensors.items()},
                             1) for s in states]
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
        return first.like(tensors, beams)

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
        return self.like({**{n: t[..., unused:, :] if n in self.grows else t for n, t in self.tensors.items()},
                          START: self[START] - unused})

    @property
    def batch_size(self) -> int:
        return next(t.size(0) if n not in self.shared else t.size(0) * self.beams for n, t in self.tensors.items()
                    if n not in self.deferred)  # (whose rows may be those before a reorder)


def target_mask(state: DecoderState, steps: int) -> Optional[torch.Tensor]:
    """``[B, steps]``, True at each row's own positions of a growing tensor ``steps`` long (None where every row's
    are all: a state never merged)."""
    if START not in state:
        return None
    return torch.arange(steps, device=state[START].device) >= state[START].unsqueeze(1)
