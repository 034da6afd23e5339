"""The hand-written recurrences equal PyTorch's modules and autograd, values and gradients."""
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


def test_fused_decoder_gradients_equal_step_by_step_autograd():
    """RNNSearch.forward (fused) against the same maths through decode_step's autograd path."""
    torch.manual_seed(0)
    model = build_model({**TINY_CONFIG, "param_init": 0.5}, 30, 25).double().train()
    g = torch.Generator().manual_seed(1)
    src = [torch.randint(4, 30, (n,), generator=g).tolist() for n in (5, 2, 7)]
    tgt = [torch.randint(4, 25, (n,), generator=g).tolist() for n in (4, 6, 1)]
    b = make_batch(src, tgt)
    logits, att = model(b)
    w1, w2 = torch.randn_like(logits), torch.randn_like(att["source"])
    fused = torch.autograd.grad((logits * w1).sum() + (att["source"] * w2).sum(), list(model.parameters()))
    state = model.encode(b.src, b.src_lens)
    steps, alphas = [], []
    for t in range(b.tgt_in.size(1)):  # the unfused decoder: decode_step's own maths, kept for logits
        logits_t, state, att_t = model.decoder.step(model.tgt_emb(b.tgt_in[:, t]), state)
        steps.append(logits_t)
        alphas.append(att_t["source"])
    ref_logits, ref_att = torch.stack(steps, 1), torch.stack(alphas, 1)
    assert torch.allclose(logits, ref_logits, atol=1e-10) and torch.allclose(att["source"], ref_att, atol=1e-12)
    plain = torch.autograd.grad((ref_logits * w1).sum() + (ref_att * w2).sum(), list(model.parameters()))
    for (name, _), a, c in zip(model.named_parameters(), fused, plain):
        assert torch.allclose(a, c, atol=1e-9), name
