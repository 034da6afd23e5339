"""Recurrent cells of the attentive RNN decoders: one transition s_{j-1} -> s_j around the attention step.

A cell owns the maps of everything that enters its gates: the ``inputs`` known before
attention (the previous word's embedding E y_{j-1}, the reverse decoder's mean state R̃) and
the attention ``contexts`` (source c^e_j, target c^d_j, ...). Where the attention reads the
state and which state it reads is the cell's choice, so :meth:`Cell.step` receives an
``attend`` function:

- :class:`GRUCell`, :class:`LSTMCell` (RNNSearch, target-target-attention.txt Eq. 1-11): attend
  from s_{j-1}, whose query W s_{j-1} is computed in the same matrix product as the recurrent
  gate terms, then update with the contexts in the gates;
- :class:`ConditionalGRU` (the conditional GRU of Nematus and of the multi-source paper's
  multimodal systems): s'_j = GRU_1(s_{j-1}, E y_{j-1}), attend from s'_j, then
  s_j = GRU_2(s'_j, c_j).
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

import torch
from torch import nn

from nmtkit.models.activation import tanh

Tensors = dict[str, torch.Tensor]
#: ``attend(s, query) -> (contexts, weights)``, both by name: ``s`` the state the attention reads, ``query``
#: its projection when the cell computed it (None: the attention projects ``s`` itself).
Attend = Callable[[torch.Tensor, Optional[torch.Tensor]], tuple[Tensors, Tensors]]


def gru_update(gi: torch.Tensor, gh: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """One GRU update from input and hidden gate pre-activations ``[B, 3H]`` (r, z, n order, cuDNN's layout)."""
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


class Cell(nn.Module):
    """A recurrent transition with named inputs and contexts.

    ``inputs`` and ``contexts`` map names to sizes; each gets a map into the gates (the first
    input's carries the bias). ``query_size`` > 0 makes the recurrent product also compute the
    attention query W s_{j-1} (only cells that attend from s_{j-1} can: ``fuses_query``).
    """

    gates_per_unit = 3
    fuses_query = True
    state_names: tuple[str, ...] = ("hidden",)

    def __init__(self, hidden_size: int, inputs: Mapping[str, int], contexts: Mapping[str, int], query_size: int = 0):
        super().__init__()
        if query_size and not self.fuses_query:
            raise ValueError(f"{type(self).__name__} attends after its first transition: it cannot fuse the query")
        self.hidden_size, self.query_size = hidden_size, query_size
        self.gate_size = self.gates_per_unit * hidden_size
        self.inputs = nn.ModuleDict({name: nn.Linear(size, self.gate_size, bias=i == 0)
                                     for i, (name, size) in enumerate(inputs.items())})
        self.contexts = nn.ModuleDict({name: nn.Linear(size, self.gate_size, bias=False)
                                       for name, size in contexts.items()})
        self.hidden = nn.Linear(hidden_size, self.gate_size + query_size)  # s_{j-1} -> [recurrent gate terms; W s_{j-1}]

    def start(self, s0: torch.Tensor) -> Tensors:
        """The initial state entries from s_0 ``[B, H]``."""
        return {"hidden": s0}

    def context_gates(self, contexts: Tensors, gi: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``gi`` plus the contexts' gate terms (their sum alone without ``gi``)."""
        for name, c in contexts.items():
            term = self.contexts[name](c)
            gi = term if gi is None else gi + term
        assert gi is not None, "a cell needs at least one context"
        return gi

    def recurrent(self, s: torch.Tensor) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """The recurrent gate terms of ``s`` and, if fused, the attention query."""
        if not self.query_size:
            return self.hidden(s), None
        gh, query = self.hidden(s).split([self.gate_size, self.query_size], dim=-1)
        return gh, query

    def step(self, gi: torch.Tensor, state: Tensors, attend: Attend) -> tuple[Tensors, Tensors, Tensors]:
        """One step from the input gate terms ``gi [B, G]``: the new state entries, the contexts and the weights.

        Here: attend from s_{j-1}, then :meth:`update` with the contexts in the gates (Eq. 8, 10)."""
        s = state["hidden"]
        gh, query = self.recurrent(s)
        contexts, weights = attend(s, query)
        return self.update(self.context_gates(contexts, gi), gh, state), contexts, weights

    def update(self, gi: torch.Tensor, gh: torch.Tensor, state: Tensors) -> Tensors:
        """The new state entries from the input and recurrent gate terms."""
        raise NotImplementedError


class GRUCell(Cell):
    """s_j = GRU(s_{j-1}, [E y_{j-1}; c_j; ...]) with c_j attended from s_{j-1} (Eq. 8, 10)."""

    def update(self, gi: torch.Tensor, gh: torch.Tensor, state: Tensors) -> Tensors:
        return {"hidden": gru_update(gi, gh, state["hidden"])}


class LSTMCell(Cell):
    """The same with an LSTM: gates in (i, f, g, o) order, the memory cell in the state as ``cell``."""

    gates_per_unit = 4
    state_names = ("hidden", "cell")

    def start(self, s0: torch.Tensor) -> Tensors:
        return {"hidden": s0, "cell": torch.zeros_like(s0)}

    def update(self, gi: torch.Tensor, gh: torch.Tensor, state: Tensors) -> Tensors:
        h, c = lstm_update(gi + gh, state["cell"])
        return {"hidden": h, "cell": c}


class ConditionalGRU(Cell):
    """Two GRU transitions around the attention: s'_j = GRU_1(s_{j-1}, inputs), contexts attended from
    s'_j, s_j = GRU_2(s'_j, contexts). The inputs' maps feed GRU_1, the contexts' maps GRU_2."""

    fuses_query = False

    def __init__(self, hidden_size: int, inputs: Mapping[str, int], contexts: Mapping[str, int], query_size: int = 0):
        super().__init__(hidden_size, inputs, contexts, query_size)
        self.hidden2 = nn.Linear(hidden_size, self.gate_size)  # s'_j -> GRU_2's recurrent gate terms

    def step(self, gi: torch.Tensor, state: Tensors, attend: Attend) -> tuple[Tensors, Tensors, Tensors]:
        s = state["hidden"]
        s1 = gru_update(gi, self.hidden(s), s)
        contexts, weights = attend(s1, None)
        return {"hidden": gru_update(self.context_gates(contexts), self.hidden2(s1), s1)}, contexts, weights


CELLS: dict[str, type[Cell]] = {"gru": GRUCell, "lstm": LSTMCell, "cgru": ConditionalGRU}
