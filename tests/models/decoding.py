"""Decoding a batch's target one step at a time, and the check that a teacher-forced forward pass gives what it
gives: the contract of every architecture (tests/models/test_contract.py), used by each model's tests for its own
variants."""
from __future__ import annotations

from typing import Optional

import torch


def step_by_step(m, b, reorder_at: Optional[int] = None, index: Optional[torch.Tensor] = None, state=None):
    """Log-probabilities ``[B, T, V]`` of decoding ``b``'s target one step at a time from ``state`` (default
    ``m.encode(b)``), and each step's attention (a dict a step); with ``reorder_at``, the state is reordered by
    ``index`` after that step, and the later steps are fed the targets of the rows it selects. Without gradients,
    attention weights asked for."""
    with torch.no_grad(), m.attention_weights(True):
        state, out, weights, tgt = m.encode(b) if state is None else state, [], [], b.tgt_in
        for t in range(tgt.size(1)):
            lp, state, w = m.decode_step(tgt[:, t], state)
            out.append(lp)
            weights.append(w)
            if t == reorder_at:
                state, tgt = state.reorder(index), tgt.index_select(0, index)
    return torch.stack(out, 1), weights


def stacked(weights: list[dict]) -> dict[str, torch.Tensor]:
    """Each step's attention of :func:`step_by_step` stacked over the steps, ``[B, T, ...]`` (those whose width does
    not grow with the steps)."""
    return {k: torch.stack([w[k] for w in weights], 1) for k in weights[0]}


def assert_forward_equals_steps(m, b, state=None, label: str = "") -> None:
    """The teacher-forced forward pass over ``b`` gives the log-probabilities and every attention that decoding step by
    step gives (from ``state``, default ``m.encode(b)``), at every real target position; a step's attention over the
    target's own past is as wide as that past, and the forward pass's row is 0 beyond it."""
    with torch.no_grad(), m.attention_weights(True):
        out = m(b)
    lp, weights = step_by_step(m, b, state=state)
    real = b.tgt_out != 0
    torch.testing.assert_close(torch.log_softmax(out.logits, -1)[real], lp[real], atol=1e-5, rtol=0, msg=label)
    assert out.attention.keys() == weights[0].keys(), label
    for name, w in out.attention.items():
        for t, step in enumerate(weights):
            width = step[name].size(-1)
            rows = real[:, t]
            torch.testing.assert_close(w[rows, t, :width], step[name][rows], atol=1e-5, rtol=0,
                                       msg=f"{label}: attention {name} at step {t}")
            assert not w[rows, t, width:].any(), f"{label}: attention {name} at step {t} beyond what decoding sees"
