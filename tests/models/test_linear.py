"""The decoding-time linear product equals the layer's own."""
import torch
from torch import nn

from nmtkit.models.linear import linear


def test_equals_the_layer_for_2d_and_3d_inputs_with_and_without_bias():
    torch.manual_seed(0)
    for layer in (nn.Linear(7, 5), nn.Linear(7, 5, bias=False)):
        for shape in ((3, 7), (2, 4, 7), (1, 7)):
            x = torch.randn(*shape)
            with torch.no_grad():
                got = linear(layer, x)
                assert got.shape == layer(x).shape and got.is_contiguous()
                assert torch.allclose(got, layer(x), atol=1e-6)


def test_autograd_uses_the_layer_itself():
    layer = nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    linear(layer, x).sum().backward()
    assert x.grad is not None and layer.weight.grad is not None
