"""show-attend-tell: attention over the image grid that sums to one and ignores padding, teacher forcing equal to
step-by-step decoding (with and without target attention), the doubly stochastic regulariser by hand, causality."""
import pytest
import torch

from nmtkit.data.batching import Batch, Stream, pad
from nmtkit.data.streams import FEATURES, TOKENS, CorpusMeta, StreamInfo
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from nmtkit.search.beam import beam_search
from tests.models.decoding import assert_forward_equals_steps

D, V = 12, 20
META = CorpusMeta({"image": StreamInfo(FEATURES, D), "tgt": StreamInfo(TOKENS, V, "en")})
TINY = dict(arch="show-attend-tell", emb_size=8, dec_size=16, dropout=0.0, param_init=0.3)


def model(**over):
    torch.manual_seed(0)
    return build_model({**TINY, **over}, META).eval()


def batch(grid=(6, 6, 4), captions=((5, 6, 7), (8, 9), (10, 11, 12, 13))):
    """Images of ``grid`` feature vectors (zero-padded past each) and their captions."""
    g = torch.Generator().manual_seed(3)
    features = torch.zeros(len(grid), max(grid), D)
    for i, n in enumerate(grid):
        features[i, :n] = torch.randn(n, D, generator=g).abs() * 3
    lengths = torch.tensor(grid)
    return Batch({"image": Stream(features, lengths)}, pad(list(captions), bos=True), pad(list(captions), eos=True))


@pytest.mark.parametrize("over", [{}, {"target_attention": True}, {"feature_norm": False}])
def test_teacher_forcing_equals_step_by_step_decoding(over):
    m, b = model(**over), batch()
    assert_forward_equals_steps(m, b)
    with torch.no_grad():
        assert ("target" in m(b).attention) == bool(over.get("target_attention"))


def test_attention_over_the_grid_sums_to_one_and_ignores_padding():
    m, b = model(), batch()
    with torch.no_grad():
        alpha = m(b).attention["source"]  # [B, T, L]
    torch.testing.assert_close(alpha.sum(-1), torch.ones(alpha.shape[:2]))
    assert alpha[2, :, 4:].abs().max() == 0  # the third image has 4 vectors
    alone = Batch({"image": Stream(b["image"].data[2:, :4], torch.tensor([4]))}, b.tgt_in[2:], b.tgt_out[2:])
    with torch.no_grad():
        torch.testing.assert_close(m(alone).logits[0], m(b).logits[2], atol=1e-5, rtol=1e-5)


def test_the_doubly_stochastic_regulariser_is_the_papers():
    m, b = model(doubly_stochastic=0.7), batch()
    with torch.no_grad():
        out = m(b)
    alpha, expected = out.attention["source"], 0.0
    for i, (n, words) in enumerate(zip(b["image"].lengths.tolist(), (b.tgt_out != 0).sum(1).tolist())):
        coverage = alpha[i, :words, :n].sum(0)  # Σ_t α_ti over the caption's real steps, </s> included
        expected += float(((1 - coverage) ** 2).sum())
    assert float(out.losses["doubly_stochastic"]) == pytest.approx(0.7 * expected, rel=1e-5)
    assert not model(doubly_stochastic=0.0)(b).losses


def test_a_later_word_changes_no_earlier_output():
    m, b = model(target_attention=True), batch()
    changed = Batch(b.inputs, b.tgt_in.clone(), b.tgt_out)
    changed.tgt_in[0, 3] = 14
    with torch.no_grad():
        a, c = m(b).logits, m(changed).logits
    torch.testing.assert_close(a[0, :3], c[0, :3])
    assert not torch.allclose(a[0, 3], c[0, 3])


def test_beam_search_stops_at_the_caption_limit_and_the_corpus_must_have_images():
    m, b = model(max_caption_len=4), batch()
    hyps = beam_search(m, Batch(b.inputs), beam_size=3)
    assert all(len(h[0].tokens) <= 4 for h in hyps)
    with pytest.raises(NmtkitError, match="reads a features stream named 'image'"):
        build_model(TINY, CorpusMeta.text(10, 10))


def test_warm_started_target_attention_first_computes_what_the_baseline_did():
    """Table 3's "Ours" starts from the source-attention captioner: its new entries into the gates and the output
    start at zero, so the warm-started model gives the baseline's logits."""
    from nmtkit.train.warm_start import warm_start

    baseline, b = model(), batch()
    ours = model(target_attention=True)
    new, _, zeroed, _ = warm_start(ours, {"model": baseline.state_dict()})
    assert "decoder.cell.contexts.target.weight" in zeroed and "decoder.readout.extras.target.weight" in zeroed
    with torch.no_grad():
        torch.testing.assert_close(ours(b).logits, baseline(b).logits, atol=1e-6, rtol=1e-5)


def test_the_paper_s_decoder_at_the_defaults():
    """An LSTM decoder (target-target-attention.txt §4, after Xu et al.), its attention MLP of the decoder's size,
    the doubly stochastic regulariser on (λ 1), and the features' LayerNorm starting as the identity map."""
    from nmtkit.models.cells import LSTMCell

    m, b = model(), batch()  # (emb 8, dec 16, param_init 0.3; no att_size, doubly_stochastic or feature_norm given)
    assert isinstance(m.decoder.cell, LSTMCell) and m.decoder.cell.gate_size == 4 * 16
    assert m.decoder.attention.key.out_features == 16
    with torch.no_grad():
        assert float(m(b).losses["doubly_stochastic"]) > 0
    assert torch.equal(m.norm.weight, torch.ones(D)) and torch.equal(m.norm.bias, torch.zeros(D))


def test_normalised_features_make_the_model_blind_to_their_scale():
    b = batch()
    scaled = Batch({"image": Stream(b["image"].data * 10, b["image"].lengths)}, b.tgt_in, b.tgt_out)
    with torch.no_grad():
        torch.testing.assert_close(model()(scaled).logits, model()(b).logits, atol=1e-4, rtol=1e-4)
        assert not torch.allclose(model(feature_norm=False)(scaled).logits, model(feature_norm=False)(b).logits)
