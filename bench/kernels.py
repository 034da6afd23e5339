"""Micro-benchmark behind a CPU choice (not a test): tanh directly vs through the sigmoid.

    python bench/kernels.py        # 2 threads; milliseconds per call, median of 7 rounds
"""
import statistics
import time

import torch

from nmtkit.models.activation import tanh


def ms(f, n=50):
    for _ in range(5):
        f()
    rounds = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(n):
            f()
        rounds.append((time.perf_counter() - t) / n * 1e3)
    return statistics.median(rounds)


torch.set_num_threads(2)
with torch.no_grad():
    x = torch.randn(160, 40, 512)  # beam 5 x batch 32, 40 source words, attention size 512
    print(f"[160, 40, 512]: torch.tanh {ms(lambda: torch.tanh(x)):.2f} ms, torch.sigmoid {ms(lambda: torch.sigmoid(x)):.2f} ms, "
          f"nmtkit tanh {ms(lambda: tanh(x)):.2f} ms")
