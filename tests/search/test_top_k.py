"""The block-maxima top-k equals torch.topk: values, and indices that point at them."""
import pytest
import torch

from nmtkit.search.top_k import BLOCK, top_k


def check(x: torch.Tensor, k: int) -> None:
    values, indices = top_k(x, k)
    expected = x.topk(k, dim=1).values
    assert torch.equal(values, expected)
    assert torch.equal(x.gather(1, indices), values)
    assert all(len(set(row)) == k for row in indices.tolist())  # k different columns


@pytest.mark.parametrize("width", [40 * BLOCK, 40 * BLOCK + 7, 8000, 40000])
@pytest.mark.parametrize("k", [1, 2, 10])
@pytest.mark.parametrize("rows", [1, 20])  # (one sentence's beam: one row of beam × vocabulary)
def test_the_k_largest_of_random_rows(width, k, rows):
    g = torch.Generator().manual_seed(width + k)
    check(torch.randn(rows, width, generator=g), k)


def test_the_largest_in_one_block_in_the_partial_last_block_and_among_minus_infinity():
    width, k = 40 * BLOCK + 50, 10
    x = torch.randn(16, width, generator=torch.Generator().manual_seed(0))  # big enough for the block search
    x[0, 3 * BLOCK:3 * BLOCK + k] = 100 + torch.arange(k)  # all in one block
    x[1, -k:] = 100 + torch.arange(k)  # all in the partial block at the end
    x[2] = -torch.inf
    x[2, 17] = 0.0  # a row where only </s> is allowed: one finite entry
    x[3, ::BLOCK] = 50.0  # ties across blocks
    check(x, k)


def test_narrow_rows_and_few_rows_give_torch_topk():
    check(torch.randn(3, 2 * BLOCK), 4)
    check(torch.randn(1, 300), 1)
