"""The kernels behind fp32 CPU decoding speed (issue 14): PyTorch's linear against oneDNN's packed weights
(nmtkit.search.precision.PackedLinear) by number of rows, and torch.topk / max against nmtkit's block-maxima
top_k on a step's scores. Milliseconds per call, best of 3 runs of 200 calls, 2 threads.

Usage: python bench/search_kernels.py
"""
import time

import torch
import torch.nn.functional as F

from nmtkit.search.top_k import top_k

torch.set_num_threads(2)


def ms(f, *args, n: int = 200) -> float:
    """Best milliseconds per call of ``f(*args)``."""
    for _ in range(10):
        f(*args)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            f(*args)
        best = min(best, (time.perf_counter() - start) / n * 1e3)
    return best


def packed_linear(x: torch.Tensor, packed: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, packed, b, "none", [], "")


with torch.inference_mode():
    print("linear [rows, in] x [in, out]: plain / packed (ms)")
    for rows, n_in, n_out in [(1, 256, 768), (1, 256, 8000), (32, 256, 8000), (32, 256, 1024), (32, 1024, 256),
                              (32, 512, 1536), (160, 256, 8000), (640, 256, 768), (640, 1024, 256)]:
        x, w, b = torch.randn(rows, n_in), torch.randn(n_out, n_in), torch.randn(n_out)
        plain = ms(F.linear, x, w, b)
        fast = ms(packed_linear, x, torch.ops.mkldnn._reorder_linear_weight(w), b)
        print(f"  [{rows}, {n_in}] x [{n_in}, {n_out}]: {plain:.3f} / {fast:.3f}  ({fast / plain:.2f}x)")
    print("best entries of each row: torch.topk / nmtkit top_k (ms)")
    for rows, width, k in [(32, 8000, 1), (160, 8000, 1), (32, 40000, 10), (8, 40000, 10), (1, 40000, 10),
                          (1, 24000, 6), (4, 5000, 10)]:
        x = torch.randn(rows, width)
        extra = f"; max {ms(torch.max, x, 1):.3f}, amax {ms(torch.amax, x, 1):.3f}" if k == 1 else ""
        print(f"  [{rows}, {width}], k={k}: {ms(torch.topk, x, k, 1):.3f} / {ms(top_k, x, k):.3f}{extra}")
