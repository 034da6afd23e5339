"""The deep output layer: a maxout over pairs of units of U_o s + V_o E y + C_o c (+ the extra terms), then W_o
(Bahdanau et al. 2015 A.2.2; target-target-attention.txt Eq. 3, 9, 11)."""
import torch

from nmtkit.models.readout import DeepOutput


def test_logits_are_w_o_times_the_maxout_of_the_summed_terms():
    torch.manual_seed(0)
    out = DeepOutput(6, {"target": 4}, readout_size=3, vocab_size=7, dropout=0.5).eval()
    base, target, offset = torch.randn(2, 5, 6), torch.randn(2, 5, 4), torch.randn(2, 6)
    with torch.no_grad():
        t = (base @ out.base.weight.t() + out.base.bias + target @ out.extras["target"].weight.t()
             + offset.unsqueeze(1))
        maxout = torch.maximum(t[..., 0::2], t[..., 1::2])  # units 2k and 2k + 1 make pair k
        want = maxout @ out.output.weight.t() + out.output.bias
        assert torch.allclose(out(base, {"target": target}, offset), want, atol=1e-6)
        assert torch.allclose(out(base[:, 0], {"target": target[:, 0]}, offset), want[:, 0], atol=1e-6)  # one step
