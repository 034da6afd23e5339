import math

import pytest
import torch
import torch.nn.functional as F

from nmtkit.models.loss import cross_entropy


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_matches_pytorch_cross_entropy_value_and_gradient(smoothing):
    torch.manual_seed(0)
    x = torch.randn(4, 5, 11, requires_grad=True)
    y = torch.randint(1, 11, (4, 5))
    y[0, 3:] = 0
    ours = cross_entropy(x * 1.5, y, 0, smoothing)
    (g_ours,) = torch.autograd.grad(ours * 0.7, x)
    ref = F.cross_entropy((x * 1.5).view(-1, 11), y.view(-1), ignore_index=0, reduction="sum", label_smoothing=smoothing)
    (g_ref,) = torch.autograd.grad(ref * 0.7, x)
    assert ours.item() == pytest.approx(ref.item(), rel=1e-5)
    assert torch.allclose(g_ours, g_ref, atol=1e-6)
    assert (g_ours[0, 3:] == 0).all()


def test_exact_when_the_gold_probability_underflows():
    x = torch.zeros(3, 6, requires_grad=True)
    logits = x + torch.tensor([0.0, 0, 0, 0, 0, 200.0])  # p(gold = 0) = e^-200 underflows in float32
    y = torch.tensor([0, 5, 2])
    ours = cross_entropy(logits, y, ignore_index=-1)
    ref = F.cross_entropy(logits, y, reduction="sum")
    assert torch.isfinite(ours) and ours.item() == pytest.approx(ref.item(), rel=1e-5)


def test_label_smoothing_by_hand():
    """(1 - ε) · −log p(gold) + ε · mean over the vocabulary of −log p(v), on one token of a 4-word vocabulary."""
    logits = torch.tensor([[1.0, 2.0, 0.5, -1.0]])
    z = math.log(sum(math.exp(v) for v in (1.0, 2.0, 0.5, -1.0)))
    logp = [v - z for v in (1.0, 2.0, 0.5, -1.0)]
    expected = 0.9 * -logp[2] + 0.1 * sum(-v for v in logp) / 4
    assert cross_entropy(logits, torch.tensor([2]), ignore_index=-1, smoothing=0.1).item() == pytest.approx(expected)
