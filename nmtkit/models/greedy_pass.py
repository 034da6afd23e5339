"""The greedy pass of two-pass decoding (§3.3 of bidirectional-target-attention.txt), shared by the reverse
decoders of the RNN and Transformer models: decode greedily from ``<s>`` until each sentence emits ``</s>`` or
reaches its step limit; a sentence leaves the batch when it ends, as in greedy search."""
from __future__ import annotations

from typing import Callable, Iterator

import torch

from nmtkit.data.vocab import BOS, EOS
from nmtkit.models.state import DecoderState

Step = Callable[[torch.Tensor, DecoderState, int], tuple[torch.Tensor, DecoderState, torch.Tensor]]


def greedy_pass(step: Step, state: DecoderState, limit: torch.Tensor
                ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Run ``step(prev, state, t) -> (logits, state, output)`` (``t`` counts from 0) greedily over the rows of
    ``state``, row i for at most ``limit[i]`` steps, the step that emits ``</s>`` included.

    Yields, for each step t = 1, 2, ...: t, the original indices ``live`` of the rows still decoding, the
    step's ``output`` for them (rows in the order of ``live``) and ``done``, which of them end with this step.
    Callers keep their results by original row, so nothing of theirs needs reordering.
    """
    live = torch.arange(state.batch_size, device=limit.device)
    prev = torch.full_like(live, BOS)
    for t in range(1, int(limit.max()) + 1):
        logits, state, output = step(prev, state, t - 1)
        prev = logits.argmax(-1)
        done = (prev == EOS) | (limit[live] <= t)
        yield t, live, output, done
        if done.any():
            keep = (~done).nonzero().flatten()
            if not keep.numel():
                return
            live, prev, state = live[keep], prev[keep], state.reorder(keep)
