"""luong: teacher forcing equals step-by-step decoding for every variant, and so does a beam reading its sentence's
memory once; input feeding; causality."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.models import build_model, get_spec
from nmtkit.models.luong import Luong
from nmtkit.models.state import DecoderState
from nmtkit.search.beam import beam_search
from tests.conftest import forward
from tests.models.decoding import assert_forward_equals_steps

V_SRC, V_TGT = 40, 30
BASE = dict(arch="luong", emb_size=16, enc_size=12, dec_size=24, layers=2, encoder_type="brnn", attention="global",
            global_attention="general", attention_window=2, location_max_len=20, input_feed=True, dropout=0.0,
            tie_embeddings=False, param_init=0.3)
VARIANTS = [dict(global_attention=s) for s in ("dot", "general", "concat", "location")] + [
    dict(attention="local-m"), dict(attention="local-p"), dict(input_feed=False),
    dict(input_feed=False, attention="local-p"), dict(input_feed=False, attention="local-m"),
    dict(encoder_type="rnn", enc_size=24, layers=1)]


def model(**over):
    torch.manual_seed(0)
    return build_model({**BASE, **over}, CorpusMeta.text(V_SRC, V_TGT)).eval()


def batch():
    g = torch.Generator().manual_seed(1)
    src = [torch.randint(4, V_SRC, (n,), generator=g).tolist() for n in (5, 2, 7)]
    tgt = [torch.randint(4, V_TGT, (n,), generator=g).tolist() for n in (4, 6, 1)]
    return make_batch(src, tgt)


@pytest.mark.parametrize("over", VARIANTS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_teacher_forced_forward_equals_step_by_step_decoding(over):
    assert_forward_equals_steps(model(**over), batch())


@pytest.mark.parametrize("over", VARIANTS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_a_beam_reading_its_sentence_s_memory_once_finds_what_reading_it_per_hypothesis_finds(over, monkeypatch):
    m, b = model(**over), batch()
    with torch.no_grad():
        grouped = beam_search(m, b, beam_size=3, n_best=3)
        reorder = DecoderState.reorder  # (rows never said to be grouped: each row holds and reads its own memory)
        monkeypatch.setattr(DecoderState, "reorder", lambda state, index, within_sentences=False, beams=1:
                            reorder(state, index, within_sentences))
        per_row = beam_search(m, b, beam_size=3, n_best=3)
    for want, got in zip(per_row, grouped, strict=True):
        assert [h.tokens for h in got] == [h.tokens for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)


def test_input_feeding_widens_the_decoder_input():
    assert model(input_feed=True).decoder.input_size == 16 + 24
    assert model(input_feed=False).decoder.input_size == 16


def test_local_m_attends_around_the_step_it_decodes():
    """local-m: p_t = t (Eq. 9's alternative, clipped to the sentence), so step t's weights are non-zero in
    [t - D, t + D] only."""
    m, b = model(attention="local-m"), batch()
    length = int(b["src"].lengths[2])  # (7 words and </s>)
    with torch.no_grad():
        state = m.encode(b)
        for t in range(4):
            _, state, weights = m.decode_step(b.tgt_in[:, min(t, b.tgt_in.size(1) - 1)], state)
            at = (weights["source"][2] > 0).nonzero().flatten().tolist()
            assert at == list(range(max(t - 2, 0), min(t + 2, length - 1) + 1)), t


def test_the_attentional_vector_and_the_output_follow_eq_5_and_6():
    """h̃_t = tanh(W_c [c_t; h_t]) (Eq. 5), c_t the weights' mean of the source states, h_t the top layer's new
    state; p(y_t) = softmax(W_s h̃_t) (Eq. 6)."""
    m, b = model(), batch()
    with torch.no_grad():
        state = m.encode(b)
        log_probs, s1, weights = m.decode_step(b.tgt_in[:, 0], state)
        context = torch.bmm(weights["source"].unsqueeze(1), state["memory"]).squeeze(1)
        h_tilde = torch.tanh(torch.cat([context, s1["h"][:, -1]], -1) @ m.combine.weight.t())
        assert torch.allclose(s1["feed"], h_tilde, atol=1e-6)
        assert torch.allclose(log_probs, torch.log_softmax(m.output(h_tilde), -1), atol=1e-5)


def test_input_feeding_carries_the_attentional_vector():
    m, b = model(), batch()
    with torch.no_grad():
        state = m.encode(b)
        _, s1, _ = m.decode_step(b.tgt_in[:, 0], state)
        _, a, _ = m.decode_step(b.tgt_in[:, 1], s1)
        _, c, _ = m.decode_step(b.tgt_in[:, 1], s1.replace(feed=torch.zeros_like(s1["feed"])))
    assert not torch.allclose(a["h"], c["h"])
    assert (s1["feed"] != 0).any()


@pytest.mark.parametrize("over", [{}, {"input_feed": False}])
def test_causal(over):
    m, b = model(**over), batch()
    changed = b.tgt_in.clone()
    changed[:, 3:] = 5
    with torch.no_grad():
        l1, _ = forward(m, b)
        l2, _ = forward(m, b.with_target(changed))
    assert torch.allclose(l1[:, :3], l2[:, :3], atol=1e-6)


def test_attention_reads_the_new_state():
    """Luong attends from h_t after the step: the token fed at step t changes a_t (unlike RNNSearch)."""
    m, b = model(), batch()
    changed = b.tgt_in.clone()
    changed[:, 2] = (changed[:, 2] + 1) % (V_TGT - 4) + 4
    with torch.no_grad():
        _, a1 = forward(m, b)
        _, a2 = forward(m, b.with_target(changed))
    assert torch.equal(a1["source"][:, :2], a2["source"][:, :2])
    assert (a1["source"][:, 2] - a2["source"][:, 2]).abs().max() > 1e-4


def test_options_are_registered_with_paper_names():
    names = {o.name for o in get_spec("luong").options}
    assert {"global_attention", "input_feed", "attention", "attention_window", "layers"} <= names
    with pytest.raises(ValueError, match="--tie-embeddings needs --emb-size"):
        Luong(10, 10, emb_size=8, dec_size=16, tie_embeddings=True)
