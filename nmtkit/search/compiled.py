"""``--compile`` for decoding: the model's decoding step through ``torch.compile`` (:class:`Compiled`).

On a CPU a decoding step is many small operations (a GRU cell's gates, attention's energies, the readout), each
a pass over memory and a call through PyTorch's dispatcher; Inductor fuses the elementwise ones into loops of
generated C++ and calls the matrix products directly. The outputs are those of the model uncompiled (to rounding);
the first steps cost the compilation (seconds on a tiny model, about a minute on a large one; Inductor keeps what
it built in its cache on disk, so that a second run starts sooner), and a few more shapes compile once each (a
batch of one sentence, a merged state); a search's first two steps run uncompiled. What it gains, measured:
bench/README.md, "Decoding compiled".
"""
from __future__ import annotations

import contextlib
from typing import Callable, ContextManager, Union

import torch

from nmtkit.compiling import compiled
from nmtkit.models.seq2seq import AttentionWeights, Seq2Seq
from nmtkit.models.state import PENDING, DecoderState
from nmtkit.search.wrapped import Wrapped


class Compiled(Wrapped):
    """``model`` with its ``decode_step`` compiled (``backend``: Inductor unless a test gives another), the rest
    as it is: encoding runs once a sentence, a small share of the time. A step whose growing tensors (a target
    memory, self-attention caches) hold no or one position runs uncompiled: each of those sizes would be a graph
    of its own (the compiler specialises sizes 0 and 1), twice as many graphs to compile for two steps a search.

    In fp32 on a CPU the step's matrix layers multiply by weights packed once for oneDNN
    (:class:`nmtkit.search.precision.PackedLinear`), called as an operator of their own that the compiler leaves
    as it is; compiled plain, they went to slower kernels than the uncompiled step's. ``frozen``: the weights
    frozen into the graphs as constants instead (Inductor's ``freezing``, set while the step runs, since the
    compiler reads it as it traces as well as when it builds), each graph its own copy: for bf16 on a CPU, where
    Inductor then casts them once rather than at every step (bench/README.md, "One packed copy of the weights")."""

    #: compilations of one function that the process allows (PyTorch's default: 8, then it runs the function
    #: uncompiled): the models of one class share their ``decode_step``, and each compiles a few shapes
    RECOMPILE_LIMIT = 64

    def __init__(self, model: Seq2Seq, backend: Union[str, Callable] = "inductor", frozen: bool = False):
        super().__init__(model)
        limit = torch._dynamo.config.recompile_limit
        torch._dynamo.config.recompile_limit = max(limit, self.RECOMPILE_LIMIT)
        self._step = compiled(model.decode_step, backend)
        self._settings: ContextManager = contextlib.nullcontext()  # (nothing to set at each step)
        if frozen:
            import torch._inductor.config as inductor_config  # (imported by compiled(): importing it takes seconds)

            self._settings = inductor_config.patch(freezing=True)

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        if any(state[name].size(-2) < 2 for name in state.grows):  # (see the class: a search's first two steps)
            return self.model.decode_step(prev, state)
        if state.deferred and PENDING not in state:  # (rows recorded or not, one kind of state: one graph)
            state = state.replace(**{PENDING: torch.arange(state.batch_size, device=prev.device)})
        with self._settings:
            return self._step(_plain(prev), state.like({name: _plain(t) for name, t in state.tensors.items()}))


def _plain(t: torch.Tensor) -> torch.Tensor:
    """``t`` contiguous and not a view of another tensor. The compiled step guards on its inputs' strides and, for a
    view, on its base's sizes: a search's tensors are views at some steps (a slice, a reshape) and fresh copies at
    others (a reorder, a merge), and each kind would be a graph of its own, compiled when a server's first lines
    meet it. A large tensor is copied once (an encoder's states, strided as the encoder left them): the step
    passes it on in the state it returns, so later steps meet the copy; what is copied at every step is small (the
    previous tokens, a view of the search's)."""
    if not t.is_contiguous():
        return t.contiguous()
    return t.clone() if t._base is not None else t
