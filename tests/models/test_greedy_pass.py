"""The greedy pass of two-pass decoding: each row runs until it emits </s> (that step included) or reaches its
limit, and leaves the batch then; its state rows follow it."""
import torch

from nmtkit.data.vocab import BOS, EOS
from nmtkit.models.greedy_pass import greedy_pass
from nmtkit.models.state import DecoderState

VOCAB = 8


def test_rows_leave_the_batch_when_they_end():
    ends = torch.tensor([3, 1, 9, 2])  # the step at which each row emits </s>; row 2 never does within its limit
    limit = torch.tensor([5, 5, 4, 5])
    seen = []

    def step(prev, state, t):
        rows = state["row"]  # which original row each state row belongs to
        seen.append((t, rows.tolist(), prev.tolist()))
        logits = torch.zeros(rows.numel(), VOCAB)
        logits[:, 5] = 1.0
        logits[ends[rows] == t + 1, EOS] = 2.0
        return logits, state, rows * 10 + t

    out = list(greedy_pass(step, DecoderState({"row": torch.arange(4)}), limit))
    assert [t for t, *_ in out] == [1, 2, 3, 4]
    assert [live.tolist() for _, live, _, _ in out] == [[0, 1, 2, 3], [0, 2, 3], [0, 2], [2]]
    assert [live[done].tolist() for _, live, _, done in out] == [[1], [3], [0], [2]]  # row 2 at its limit
    assert [o.tolist() for *_, o, _ in out] == [[0, 10, 20, 30], [1, 21, 31], [2, 22], [23]]
    assert [rows for _, rows, _ in seen] == [[0, 1, 2, 3], [0, 2, 3], [0, 2], [2]]  # the state was reordered
    assert seen[0][2] == [BOS] * 4 and seen[1][2] == [5, 5, 5]  # <s>, then the argmax of the last step
