"""tanh through the sigmoid equals torch.tanh, in value and gradient."""
import torch

from nmtkit.models.activation import tanh


def test_equals_torch_tanh_with_and_without_autograd():
    x = torch.linspace(-20, 20, 1001, dtype=torch.float64, requires_grad=True)
    y = tanh(x)
    assert torch.allclose(y, torch.tanh(x), atol=1e-12)
    (g,) = torch.autograd.grad(y.sum(), x)
    assert torch.allclose(g, 1 - torch.tanh(x) ** 2, atol=1e-12)
    with torch.no_grad():
        assert torch.allclose(tanh(x), torch.tanh(x), atol=1e-12)
    assert torch.allclose(tanh(x.detach().float()), torch.tanh(x.detach().float()), atol=1e-6)
