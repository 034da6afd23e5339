"""The hand-written recurrences equal PyTorch's modules and autograd, values and gradients."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.models import build_model
from nmtkit.models.encoder import RNNEncoder
from tests.conftest import TINY_CONFIG


@pytest.mark.parametrize("cell,layers,bidirectional", [("gru", 1, True), ("gru", 2, False), ("lstm", 1, False),
                                                       ("lstm", 2, True)])
def test_encoder_equals_its_module_over_packed_sequences(cell, layers, bidirectional):
    """RNNEncoder's hand-written recurrences (CPU) against its nn.GRU/nn.LSTM on packed sequences (GPU): memory, final
    states of every layer and direction, and the gradients of the input and every parameter."""
    torch.manual_seed(0)
    encoder = RNNEncoder(5, 4, layers, cell, bidirectional).double()
    x = torch.randn(3, 6, 5, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([6, 2, 4])
    mask = torch.arange(6) < lengths.unsqueeze(1)
    memory, _, final = encoder(x, lengths)  # the CPU path: hand-written
    ref, _, ref_final = encoder.packed(x, mask, lengths)
    final, ref_final = (final, ref_final) if cell == "lstm" else ((final,), (ref_final,))
    assert torch.allclose(memory, ref, atol=1e-12) and (memory[~mask] == 0).all()
    assert all(torch.allclose(a, b, atol=1e-12) for a, b in zip(final, ref_final))
    outputs = [memory, *final]
    weights = [torch.randn_like(o) for o in outputs]
    loss = lambda outs: sum((o * w).sum() for o, w in zip(outs, weights))
    g1 = torch.autograd.grad(loss(outputs), [x, *encoder.rnn.parameters()])
    g2 = torch.autograd.grad(loss([ref, *ref_final]), [x, *encoder.rnn.parameters()])
    assert all(torch.allclose(a, b, atol=1e-10) for a, b in zip(g1, g2))


@pytest.mark.parametrize("arch", ["rnnsearch", "target-attn", "bitatt-rnn"])
def test_accelerated_decoder_gradients_equal_step_by_step_autograd(arch):
    """RNNDecoder.forward (accelerated) against the same maths through decode steps' autograd, values and gradients."""
    torch.manual_seed(0)
    model = build_model({**TINY_CONFIG, "arch": arch, "param_init": 0.5}, CorpusMeta.text(30, 25)).double().train()
    g = torch.Generator().manual_seed(1)
    src = [torch.randint(4, 30, (n,), generator=g).tolist() for n in (5, 2, 7)]
    tgt = [torch.randint(4, 25, (n,), generator=g).tolist() for n in (4, 6, 1)]
    b = make_batch(src, tgt)
    decoder = model.decoder
    future = torch.randn(3, 24, dtype=torch.float64, requires_grad=True) if model.reverse is not None else None
    start = decoder.start(model.source(b), future)
    emb = model.tgt_emb(b.tgt_in)
    logits, _, att = decoder(emb, start)
    assert ("target" in att) == (arch != "rnnsearch")
    ws = {k: torch.randn_like(a) for k, a in att.items()}
    w_logits = torch.randn_like(logits)
    inputs = list(model.parameters()) + ([future] if future is not None else [])
    loss = lambda l, a: (l * w_logits).sum() + sum((a[k] * ws[k]).sum() for k in ws)
    accelerated = torch.autograd.grad(loss(logits, att), inputs, allow_unused=True, retain_graph=True)
    state, steps, weights = start, [], {k: [] for k in att}
    for t in range(b.tgt_in.size(1)):  # the decoder's steps: decode_step's own maths
        logits_t, state, att_t = decoder.step(emb[:, t], state)
        steps.append(logits_t)
        for k, a in att_t.items():
            weights[k].append(torch.nn.functional.pad(a, (0, att[k].size(-1) - a.size(-1))))
    ref_logits, ref_att = torch.stack(steps, 1), {k: torch.stack(v, 1) for k, v in weights.items()}
    assert torch.allclose(logits, ref_logits, atol=1e-10)
    assert all(torch.allclose(att[k], ref_att[k], atol=1e-12) for k in att)
    plain = torch.autograd.grad(loss(ref_logits, ref_att), inputs, allow_unused=True)
    names = [n for n, _ in model.named_parameters()] + ["R~"]
    for name, a, c in zip(names, accelerated, plain):
        assert (a is None) == (c is None), name
        assert a is None or torch.allclose(a, c, atol=1e-9), name


@pytest.mark.parametrize("arch,cell,accelerated", [("rnnsearch", "gru", True), ("bitatt-rnn", "gru", True),
                                                   ("rnnsearch", "lstm", False), ("target-attn", "cgru", False)])
def test_the_accelerator_runs_only_the_configurations_it_covers(arch, cell, accelerated, monkeypatch):
    """GRU decoders run attentive_gru in teacher forcing; LSTM and conditional-GRU decoders their autograd steps."""
    import nmtkit.models.rnn_decoder as rnn_decoder

    calls = []
    real = rnn_decoder.attentive_gru
    monkeypatch.setattr(rnn_decoder, "attentive_gru", lambda *a: calls.append(1) or real(*a))
    model = build_model({**TINY_CONFIG, "arch": arch, "decoder_cell": cell}, CorpusMeta.text(30, 25))
    model(make_batch([[5, 6, 7]], [[8, 9]]))
    assert model.decoder.accelerated == accelerated and bool(calls) == accelerated


def test_a_decoder_with_another_attention_runs_its_steps_and_equals_them():
    """An injected attention of the protocol (Luong's general score here) is not the accelerator's: the decoder
    runs the autograd steps, and teacher forcing equals decoding step by step."""
    from nmtkit.models.luong_attention import LuongAttention
    from nmtkit.models.rnn_decoder import RNNDecoder
    from nmtkit.models.state import DecoderState

    torch.manual_seed(0)
    decoder = RNNDecoder(6, 8, 10, 10, 6, 20, 0.0, attention=LuongAttention(10, 8, "general"))
    memory, mask = torch.randn(2, 4, 8), torch.tensor([[True] * 4, [True, True, False, False]])
    state = decoder.start(DecoderState({"memory": memory, "mask": mask}, static=("memory", "mask")))
    emb = torch.randn(2, 3, 6)
    logits, _, att = decoder(emb, state)
    assert not decoder.accelerated and decoder.cell.query_size == 0
    for t in range(3):
        step_logits, state, step_att = decoder.step(emb[:, t], state)
        assert torch.allclose(step_logits, logits[:, t], atol=1e-6)
        assert torch.allclose(step_att["source"], att["source"][:, t]) and (step_att["source"][1, 2:] == 0).all()
