"""The k largest entries of each row of a wide matrix (a step's scores over the vocabulary, or over the
vocabulary times the beam), faster than ``torch.topk`` on CPUs.

The rows are cut into blocks. Any of a row's k largest entries lies in one of the k blocks with the largest
maxima: were it in another block, each of those k blocks would hold an entry at least as large, and it would
not be among the k largest. So the search takes the block maxima (a fast vectorised reduction), then
``torch.topk`` over the entries of the k best blocks only, where ``torch.topk`` over a whole row of tens of
thousands of entries is slow (bench/README.md, issue 14).
"""
from __future__ import annotations

import torch

BLOCK = 128


def top_k(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Values and column indices ``[rows, k]`` of the k largest entries of each row of ``x [rows, width]``,
    largest first: ``torch.topk(x, k, dim=1)``, up to the order of equal values."""
    rows, width = x.shape
    blocks = width // BLOCK
    if blocks <= 2 * k or (x.numel() < 2 ** 16 and width < 2 ** 14) or x.device.type != "cpu":  # small, or a GPU
        return x.topk(k, dim=1)
    whole = blocks * BLOCK
    best_blocks = x[:, :whole].view(rows, blocks, BLOCK).amax(2).topk(k, dim=1).indices  # [rows, k]
    columns = (best_blocks.unsqueeze(2) * BLOCK + torch.arange(BLOCK, device=x.device)).view(rows, k * BLOCK)
    if whole < width:  # the last, partial block is always searched
        tail = torch.arange(whole, width, device=x.device).expand(rows, width - whole)
        columns = torch.cat([columns, tail], 1)
    values, chosen = x.gather(1, columns).topk(k, dim=1)
    return values, columns.gather(1, chosen)
