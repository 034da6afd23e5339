"""The machine's matrix-multiply rate, for the compute bounds of bench/beam_profile.py and bench/train_profile.py."""
from __future__ import annotations

import time

import torch


def matmul_rate(rows: int, inner: int, out: int, repeats: int = 30) -> float:
    """Multiply-adds per second of a [rows, inner] x [inner, out] product, best of ``repeats``."""
    a, b = torch.randn(rows, inner), torch.randn(inner, out)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return rows * inner * out / best
