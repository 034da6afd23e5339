"""The kernels behind fp32 CPU decoding speed (issues 14 and 34): PyTorch's linear against oneDNN's packed weights
(nmtkit.search.precision.PackedLinear) by weight size and number of rows, marking where PackedLinear packs, and
torch.topk / max against nmtkit's block-maxima top_k on a step's scores. Best of 3 runs of 200 calls, 2 threads.

Usage: python bench/search_kernels.py
"""
import time

import torch
import torch.nn.functional as F

from nmtkit.search.precision import PackedLinear, fewest_packed_rows
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
    print("linear [rows, in] x [in, out]: packed / plain time by rows; * where PackedLinear packs")
    for n_in, n_out in [(256, 256), (256, 768), (1024, 256), (512, 512), (512, 2048), (256, 8000)]:
        w, b = torch.randn(n_out, n_in), torch.randn(n_out)
        packed, fewest = torch.ops.mkldnn._reorder_linear_weight(w), fewest_packed_rows(w)
        ratios = []
        for rows in (1, 2, 5, 8, 12, 16, 32, 160, 640):
            x = torch.randn(rows, n_in)
            ratio = ms(packed_linear, x, packed, b) / ms(F.linear, x, w, b)
            ratios.append(f"{rows}: {ratio:.2f}{'*' if fewest <= rows <= PackedLinear.MOST_ROWS else ''}")
        print(f"  [{n_in}, {n_out}]  " + "  ".join(ratios))
    print("best entries of each row: torch.topk / nmtkit top_k (ms)")
    for rows, width, k in [(32, 8000, 1), (160, 8000, 1), (32, 40000, 10), (8, 40000, 10), (1, 40000, 10),
                          (1, 24000, 6), (4, 5000, 10)]:
        x = torch.randn(rows, width)
        extra = f"; max {ms(torch.max, x, 1):.3f}, amax {ms(torch.amax, x, 1):.3f}" if k == 1 else ""
        print(f"  [{rows}, {width}], k={k}: {ms(torch.topk, x, k, 1):.3f} / {ms(top_k, x, k):.3f}{extra}")
