"""The state of a training run that a checkpoint keeps, so that ``--resume`` continues exactly:
progress counters, random number generators, and what :mod:`~nmtkit.train.schedules` and
:class:`~nmtkit.train.validation.EarlyStopping` hold."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch


@dataclass
class Progress:
    """Where a run is: updates done, epoch, batches of the epoch consumed, times (s) and tokens."""

    step: int = 0
    epoch: int = 1
    batch: int = 0
    elapsed: float = 0.0  # in updates
    wall: float = 0.0  # everything, validation included
    tokens: int = 0
    oom_skipped: int = 0
    window_loss: float = 0.0  # summed over the updates since the last log line
    window_tokens: int = 0
    window_time: float = 0.0

    def state(self) -> dict:
        return asdict(self)


def rng_state() -> dict:
    """The random number generators' states: batch order comes from the seed and epoch, the rest from these."""
    rng = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    return rng


def restore_rng(rng: dict) -> None:
    """Put back the generators' states of :func:`rng_state`."""
    torch.set_rng_state(rng["torch"])
    if torch.cuda.is_available() and "cuda" in rng:
        torch.cuda.set_rng_state_all(rng["cuda"])
