"""A finished output sentence, and the attention history of hypotheses."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass
class Hypothesis:
    """Output ids (without ``</s>``), log-probability, ranking score, and attention per step.

    ``attention`` maps a name (``source``, ...) to an array ``[len(tokens) + 1, ...]``: one
    row per generated token, ``</s>`` included.
    """

    tokens: list[int]
    logprob: float
    score: float
    attention: dict[str, np.ndarray] = field(default_factory=dict)


def collect_attention(history: dict[str, torch.Tensor], row: int, length: int) -> dict[str, np.ndarray]:
    """Rows ``[:length]`` of one hypothesis' attention history, as float32 arrays."""
    return {k: v[row, :length].float().cpu().numpy() for k, v in history.items()}


def append_attention(history: dict[str, torch.Tensor], step: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Add one step's weights ``[N, W]`` to the histories ``[N, t, W']``.

    Widths may grow from step to step (target attention covers the t previous outputs at
    step t + 1): the narrower side is padded with zeros.
    """
    def append(old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
        width = max(old.size(-1), new.size(-1))
        pad = lambda x: torch.nn.functional.pad(x, (0, width - x.size(-1)))
        return torch.cat([pad(old), pad(new).unsqueeze(1)], 1)

    return {k: append(history[k], w) if k in history else w.unsqueeze(1) for k, w in step.items()}
