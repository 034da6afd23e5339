"""Micro-benchmark (not a test): RNNEncoder's hand-written CPU recurrences against the same
nn.GRU/nn.LSTM over packed sequences (PyTorch's CPU path), forward and backward.

    python bench/encoder.py

A bidirectional layer of 128 units per direction over 128-dimensional inputs, a batch of 64
sentences of S/3..S tokens, one thread; median CPU time (process time, so that other jobs on
the machine move it little) of 6 runs after a warm-up.
"""
import statistics
import time

import torch

from nmtkit.models.encoder import RNNEncoder

torch.set_num_threads(1)


def cpu_ms(run) -> float:
    times = []
    for _ in range(7):
        start = time.process_time()
        run()[0].sum().backward()
        times.append(time.process_time() - start)
    return statistics.median(times[1:]) * 1e3


for cell in ("lstm", "gru"):
    for length in (25, 50, 80):
        torch.manual_seed(0)
        encoder = RNNEncoder(128, 128, 1, cell, True)
        x = torch.randn(64, length, 128, requires_grad=True)
        lengths = torch.randint(length // 3, length + 1, (64,))
        lengths[0] = length
        mask = torch.arange(length) < lengths.unsqueeze(1)
        packed = cpu_ms(lambda: encoder.packed(x, mask, lengths))  # noqa: B023 (called at once)
        masked = cpu_ms(lambda: encoder.masked(x, mask, lengths))  # noqa: B023
        print(f"{cell} S={length}: packed {packed:.0f} ms, hand-written {masked:.0f} ms ({packed / masked:.2f}x)")
