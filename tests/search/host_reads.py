"""Counting the device-to-host reads that a search makes itself, step by step.

A read (``bool(t)``, ``t.tolist()``, ``t.item()``, ``t.nonzero()``, indexing by a boolean mask...) waits for the
device to finish its queued work, so on a GPU each one costs a round trip. :class:`HostReads` is a
``TorchFunctionMode`` that counts the reads whose nearest caller outside torch is a given file.
"""
from __future__ import annotations

import os
import sys

import torch
from torch.overrides import TorchFunctionMode

from nmtkit.data.vocab import EOS
from tests.search.scripted import ScriptedModel

READS = {"__bool__", "__int__", "__float__", "__index__", "item", "tolist", "nonzero", "cpu", "numpy"}
TORCH = os.path.dirname(torch.__file__)


def _reads(func, args) -> bool:
    name = getattr(func, "__name__", "")
    if name in READS:
        return True
    # indexing by a boolean mask finds the mask's true entries on the host
    return name in ("__getitem__", "__setitem__") and any(
        isinstance(a, torch.Tensor) and a.dtype == torch.bool for a in (args[1] if isinstance(args[1], tuple)
                                                                         else (args[1],)))


class HostReads(TorchFunctionMode):
    """Reads made by code in ``filename`` (a path suffix), per step: ``steps[t]`` counts those after the t-th
    :meth:`step` call; ``before`` those before the first."""

    def __init__(self, filename: str):
        super().__init__()
        self.filename, self.before, self.steps = filename, 0, []

    def step(self) -> None:
        self.steps.append(0)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if _reads(func, args):
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith(TORCH):
                frame = frame.f_back
            if frame is not None and frame.f_code.co_filename.endswith(self.filename):
                if self.steps:
                    self.steps[-1] += 1
                else:
                    self.before += 1
        return func(*args, **(kwargs or {}))


class LateEnd(ScriptedModel):
    """A scripted model that puts ``</s>`` far below every word (finite, so it can be forced), and tells
    ``reads`` of each step."""

    def __init__(self, reads: HostReads):
        super().__init__()
        self.reads = reads

    def decode_step(self, prev, state):
        self.reads.step()
        lp, state, attention = super().decode_step(prev, state)
        lp[:, EOS] = -1e4
        return lp, state, attention
