"""RNNSearch maths: teacher forcing equals step-by-step decoding, ordering, causality, padding."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import BOS
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from tests.conftest import TINY_CONFIG, forward
from tests.models.decoding import assert_forward_equals_steps

V_SRC, V_TGT = 40, 30


def model(**over):
    torch.manual_seed(0)
    return build_model({**TINY_CONFIG, **over}, CorpusMeta.text(V_SRC, V_TGT)).eval()


def batch():
    g = torch.Generator().manual_seed(1)
    src = [torch.randint(4, V_SRC, (n,), generator=g).tolist() for n in (5, 2, 7)]
    tgt = [torch.randint(4, V_TGT, (n,), generator=g).tolist() for n in (4, 6, 1)]
    return make_batch(src, tgt)


@pytest.mark.parametrize("over", [{}, {"tie_embeddings": True}, {"att_size": 7, "readout_size": 16}])
def test_teacher_forced_forward_equals_step_by_step_decoding(over):
    assert_forward_equals_steps(model(**over), batch())


def test_attention_sums_to_one_and_ignores_padding():
    m, b = model(), batch()
    with torch.no_grad():
        _, att = forward(m, b)
    w = att["source"]  # [B, T, S]
    assert torch.allclose(w.sum(-1), torch.ones(w.shape[:2]), atol=1e-6)
    for i, n in enumerate(b["src"].lengths.tolist()):
        assert (w[i, :, n:] == 0).all()


def test_attention_reads_the_state_before_the_recurrent_step():
    """RNNSearch: alpha_i comes from s_{i-1}, so the token fed at step i cannot change alpha_i,
    only alpha_{i+1}. (Luong-style pipelines attend after the step and fail this test.)"""
    m, b = model(param_init=0.5), batch()
    changed = b.tgt_in.clone()
    changed[:, 2] = (changed[:, 2] + 1) % (V_TGT - 4) + 4
    with torch.no_grad():
        _, a1 = forward(m, b)
        _, a2 = forward(m, b.with_target(changed))
    assert torch.equal(a1["source"][:, :3], a2["source"][:, :3])
    assert (a1["source"][:, 3] - a2["source"][:, 3]).abs().max() > 1e-3


def test_first_attention_depends_only_on_the_source():
    m, b = model(), batch()
    state = m.encode(b)
    with torch.no_grad():
        _, _, a_bos = m.decode_step(torch.full((3,), BOS), state)
        _, _, a_other = m.decode_step(torch.full((3,), 7), state)
    assert torch.equal(a_bos["source"], a_other["source"])


def test_context_enters_the_recurrent_step():
    """c_i is an input of the GRU: changing the source changes the new state even with the same s_{i-1}."""
    m, b = model(), batch()
    with torch.no_grad():
        s1 = m.encode(b)
        other = make_batch([[5] * (n - 1) for n in b["src"].lengths.tolist()], b.tgt_out.tolist())
        s2 = m.encode(other).replace(hidden=s1["hidden"])
        _, n1, _ = m.decode_step(b.tgt_in[:, 0], s1)
        _, n2, _ = m.decode_step(b.tgt_in[:, 0], s2)
    assert not torch.allclose(n1["hidden"], n2["hidden"])


def test_causal_outputs_do_not_see_later_targets():
    m, b = model(), batch()
    changed = b.tgt_in.clone()
    changed[:, 3:] = 5
    with torch.no_grad():
        l1, _ = forward(m, b)
        l2, _ = forward(m, b.with_target(changed))
    assert torch.equal(l1[:, :3], l2[:, :3])


def test_padding_in_a_batch_does_not_change_a_sentence():
    m, b = model(), batch()
    with torch.no_grad():
        logits, att = forward(m, b)
        alone = make_batch([b["src"].data[1, :int(b["src"].lengths[1]) - 1].tolist()], [b.tgt_out[1, :6].tolist()[:-1]])
        l1, a1 = forward(m, alone)
    assert torch.allclose(logits[1, :6], l1[0], atol=1e-5)
    assert torch.allclose(att["source"][1, :6, :3], a1["source"][0], atol=1e-6)


def test_tied_embeddings_share_the_weight():
    m = model(tie_embeddings=True)
    assert m.decoder.readout.output.weight is m.tgt_emb.weight
    both = model(arch="bitatt-rnn", tie_embeddings=True)  # (the reverse decoder's output layer too)
    assert both.decoder.readout.output.weight is both.tgt_emb.weight is both.reverse.readout.output.weight
    with pytest.raises(NmtkitError, match=r"--arch rnnsearch: --tie-embeddings needs --readout-size \(8\) equal to --emb-size \(16\)"):
        model(tie_embeddings=True, readout_size=8)


def test_gradients_reach_every_parameter():
    m = model()
    m.train()
    logits, _ = forward(m, batch())
    logits.sum().backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


def test_the_attention_size_is_the_decoder_s_unless_given():
    m = model(emb_size=8, dec_size=12, att_size=0)
    assert m.decoder.attention.key.out_features == 12 and m.decoder.attention.v.in_features == 12
    assert model(emb_size=8, dec_size=12, att_size=7).decoder.attention.key.out_features == 7


@pytest.mark.parametrize("arch", ["rtatt-rnn", "bitatt-rnn"])
def test_the_reverse_decoder_attends_to_its_own_earlier_states(arch):
    """R_k (bidirectional-target-attention.txt Eq. 17-18): the reverse decoder has a target attention, whose context
    enters its cell and its output."""
    m = model(arch=arch)
    assert m.reverse.target_attention is not None and "target" in m.reverse.cell.contexts
    assert "target" in m.reverse.readout.extras

