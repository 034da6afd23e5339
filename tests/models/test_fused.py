"""The hand-written recurrences equal PyTorch's modules and autograd, values and gradients."""
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmtkit.data.batching import make_batch
from nmtkit.models import build_model
from nmtkit.models.fused import bigru
from tests.conftest import TINY_CONFIG


def test_bigru_equals_a_packed_bidirectional_gru():
    torch.manual_seed(0)
    rnn = torch.nn.GRU(5, 4, batch_first=True, bidirectional=True).double()
    x = torch.randn(3, 6, 5, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([6, 2, 4])
    mask = torch.arange(6) < lengths.unsqueeze(1)
    ours = bigru(x, mask, rnn)
    packed, _ = rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
    ref, _ = pad_packed_sequence(packed, batch_first=True, total_length=6)
    assert torch.allclose(ours, ref, atol=1e-12)
    w = torch.randn_like(ref)
    g1 = torch.autograd.grad((ours * w).sum(), [x, *rnn.parameters()])
    g2 = torch.autograd.grad((ref * w).sum(), [x, *rnn.parameters()])
    assert all(torch.allclose(a, b, atol=1e-10) for a, b in zip(g1, g2))


@pytest.mark.parametrize("arch", ["rnnsearch", "target-attn", "bitatt-rnn"])
def test_fused_decoder_gradients_equal_step_by_step_autograd(arch):
    """RNNDecoder.forward (fused) against the same maths through decode steps' autograd, values and gradients."""
    torch.manual_seed(0)
    model = build_model({**TINY_CONFIG, "arch": arch, "param_init": 0.5}, 30, 25).double().train()
    g = torch.Generator().manual_seed(1)
    src = [torch.randint(4, 30, (n,), generator=g).tolist() for n in (5, 2, 7)]
    tgt = [torch.randint(4, 25, (n,), generator=g).tolist() for n in (4, 6, 1)]
    b = make_batch(src, tgt)
    decoder = model.decoder
    future = torch.randn(3, 24, dtype=torch.float64, requires_grad=True) if model.reverse is not None else None
    start = decoder.start(model.source(b.src, b.src_lens), b.src_lens, future)
    emb = model.tgt_emb(b.tgt_in)
    logits, _, att = decoder(emb, start)
    assert ("target" in att) == (arch != "rnnsearch")
    ws = {k: torch.randn_like(a) for k, a in att.items()}
    w_logits = torch.randn_like(logits)
    inputs = list(model.parameters()) + ([future] if future is not None else [])
    loss = lambda l, a: (l * w_logits).sum() + sum((a[k] * ws[k]).sum() for k in ws)
    fused = torch.autograd.grad(loss(logits, att), inputs, allow_unused=True, retain_graph=True)
    state, steps, weights = start, [], {k: [] for k in att}
    for t in range(b.tgt_in.size(1)):  # the unfused decoder: decode_step's own maths
        logits_t, state, att_t = decoder.step(emb[:, t], state)
        steps.append(logits_t)
        for k, a in att_t.items():
            weights[k].append(torch.nn.functional.pad(a, (0, att[k].size(-1) - a.size(-1))))
    ref_logits, ref_att = torch.stack(steps, 1), {k: torch.stack(v, 1) for k, v in weights.items()}
    assert torch.allclose(logits, ref_logits, atol=1e-10)
    assert all(torch.allclose(att[k], ref_att[k], atol=1e-12) for k in att)
    plain = torch.autograd.grad(loss(ref_logits, ref_att), inputs, allow_unused=True)
    names = [n for n, _ in model.named_parameters()] + ["R~"]
    for name, a, c in zip(names, fused, plain):
        assert (a is None) == (c is None), name
        assert a is None or torch.allclose(a, c, atol=1e-9), name
