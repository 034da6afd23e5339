"""Transformer maths: causality, padding invariance, cached incremental decoding equal to the teacher-forced
forward, attention weights that sum to one, fused and explicit attention agreeing, pre- and post-norm."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from nmtkit.models.transformer import Positions
from tests.models.decoding import assert_forward_equals_steps, stacked, step_by_step

V_SRC, V_TGT = 40, 30
TINY = dict(arch="transformer", d_model=16, ffn_size=32, heads=4, enc_layers=2, dec_layers=2, dropout=0.0,
            attention_dropout=0.0)


def model(**over):
    torch.manual_seed(0)
    return build_model({**TINY, **over}, CorpusMeta.text(V_SRC, V_TGT)).eval()


def batch():
    g = torch.Generator().manual_seed(1)
    src = [torch.randint(4, V_SRC, (n,), generator=g).tolist() for n in (5, 2, 7)]
    tgt = [torch.randint(4, V_TGT, (n,), generator=g).tolist() for n in (4, 6, 1)]
    return make_batch(src, tgt)


def teacher_forced(m, b, weights=True):
    with torch.no_grad(), m.attention_weights(weights):
        out = m(b)
    return out.logits, out.attention.get("source")


VARIANTS = [{}, {"norm": "pre"}, {"positions": "learned"}, {"tie_embeddings": False}]


@pytest.mark.parametrize("over", VARIANTS)
def test_cached_incremental_decoding_equals_the_teacher_forced_forward(over):
    assert_forward_equals_steps(model(**over), batch())


def test_fused_attention_equals_the_explicit_softmax():
    m, b = model(), batch()
    fused, none = teacher_forced(m, b, weights=False)
    explicit, _ = teacher_forced(m, b, weights=True)
    assert none is None and torch.allclose(fused, explicit, atol=1e-5)


def test_attention_sums_to_one_and_ignores_padding():
    _, w = teacher_forced(model(), batch())
    b = batch()
    assert torch.allclose(w.sum(-1), torch.ones(w.shape[:2]), atol=1e-6)
    for i, n in enumerate(b["src"].lengths.tolist()):
        assert (w[i, :, n:] == 0).all()


@pytest.mark.parametrize("over", VARIANTS[:2])
def test_a_later_target_token_changes_no_earlier_output(over):
    m, b = model(**over), batch()
    changed = b.tgt_in.clone()
    changed[:, 3:] = 5
    l1, _ = teacher_forced(m, b, weights=False)
    l2, _ = teacher_forced(m, b.with_target(changed), weights=False)
    assert torch.allclose(l1[:, :3], l2[:, :3], atol=1e-6) and not torch.allclose(l1[:, 3:], l2[:, 3:])


def test_padding_in_a_batch_does_not_change_a_sentence():
    m, b = model(), batch()
    logits, att = teacher_forced(m, b)
    alone = make_batch([b["src"].data[1, :int(b["src"].lengths[1]) - 1].tolist()], [b.tgt_out[1, :6].tolist()[:-1]])
    l1, a1 = teacher_forced(m, alone)
    assert torch.allclose(logits[1, :6], l1[0], atol=1e-5)
    assert torch.allclose(att[1, :6, :3], a1[0], atol=1e-6)


def test_beams_reorder_the_caches_and_leave_the_memory():
    m, b = model(), batch()
    state = m.encode(b)
    _, state, _ = m.decode_step(b.tgt_in[:, 0], state)
    moved = state.reorder(torch.tensor([2, 0, 1]))
    assert torch.equal(moved["self_k0"][0], state["self_k0"][2]) and moved["self_k1"].size(2) == 1
    assert state.static >= {"mask0", "memory0.0", "memory1.1"} and "self_k0" not in state.static


def test_sinusoidal_positions_are_the_papers():
    positions = Positions(6, "sinusoidal", 0)
    for offset in (2, 500):  # the second lies beyond the table the first one computed
        pe = positions(5, offset, torch.device("cpu"))
        pos, i = offset + 2, 1  # row 2 is position offset + 2; columns 2i and 2i+1
        assert pe.shape == (5, 6)
        assert torch.allclose(pe[2, 2 * i], torch.tensor(pos / 10000 ** (2 * i / 6)).sin(), atol=1e-5)
        assert torch.allclose(pe[2, 2 * i + 1], torch.tensor(pos / 10000 ** (2 * i / 6)).cos(), atol=1e-5)


def test_embeddings_are_scaled_by_the_square_root_of_d_model_and_added_to_the_positions():
    m, tokens = model(), torch.tensor([[5, 6, 7], [8, 9, 4]])
    with torch.no_grad():
        assert torch.allclose(m._embed(m.src_emb, tokens, offset=2),
                              m.src_emb.weight[tokens] * 16 ** 0.5 + m.positions(5, 0, tokens.device)[2:], atol=1e-6)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_a_layer_is_its_sublayers_in_residual_connections_around_them(norm):
    """Post-norm: LayerNorm(x + Sublayer(x)); pre-norm: x + Sublayer(LayerNorm(x)); the feed-forward sublayer is
    W_2 max(0, W_1 x + b_1) + b_2 (Eq. 7)."""
    layer = model(norm=norm).encoder[0]
    x, mask = torch.randn(2, 5, 16), torch.tensor([[True] * 5, [True] * 3 + [False] * 2])[:, None, None, :]
    attend = lambda y: layer.attention.self_attend(y, mask)[0]
    ffn = lambda y: torch.relu(y @ layer.ffn.inner.weight.t() + layer.ffn.inner.bias) @ layer.ffn.outer.weight.t() \
        + layer.ffn.outer.bias
    first, second = layer.sub.norms
    with torch.no_grad():
        if norm == "post":
            y = first(x + attend(x))
            want = second(y + ffn(y))
        else:
            y = x + attend(first(x))
            want = y + ffn(second(y))
        assert torch.allclose(layer(x, mask), want, atol=1e-5)


def test_embedding_sharing():
    m = model()
    assert m.output.weight is m.tgt_emb.weight and m.src_emb is not m.tgt_emb
    shared = build_model({**TINY, "share_embeddings": True}, CorpusMeta.text(V_TGT, V_TGT))
    assert shared.src_emb is shared.tgt_emb is not None and shared.output.weight is shared.src_emb.weight
    with pytest.raises(NmtkitError, match="--share-embeddings needs one vocabulary"):
        model(share_embeddings=True)
    with pytest.raises(NmtkitError, match="--d-model 16 is not a multiple of --heads 3"):
        model(heads=3)


@pytest.mark.parametrize("arch", ["transformer", "bitatt-transformer", "multi-source-transformer"])
def test_embeddings_are_shared_only_between_the_words_of_one_vocabulary(arch):
    """(two vocabularies of one size: the Transformer refused them, the other two shared each id's row between two
    different words)"""
    from nmtkit.data.vocab import WordVocab

    src, tgt = WordVocab(["a", "b", "c"]), WordVocab(["x", "y", "z"])
    meta = CorpusMeta.text(len(src), len(tgt))
    with pytest.raises(NmtkitError, match="--share-embeddings needs one vocabulary for source and target"):
        build_model({**TINY, "arch": arch, "share_embeddings": True}, meta, {"src": src, "tgt": tgt})
    shared = build_model({**TINY, "arch": arch, "share_embeddings": True}, meta, {"src": src, "tgt": src})
    assert shared.src_emb is shared.tgt_emb


def test_learned_positions_refuse_a_longer_sequence():
    m = model(positions="learned", max_positions=6)
    with pytest.raises(NmtkitError, match="a sequence of 8 tokens is longer than the 6 learned positions"):
        teacher_forced(m, batch())


def test_gradients_reach_every_parameter():
    m = model(positions="learned", norm="pre")
    m.train()
    m(batch()).logits.sum().backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


def test_a_chosen_layer_and_head_give_their_own_weights():
    m, b = model(), batch()
    _, mean_last = teacher_forced(m, b)
    m.choose_attention(layer=1, head=2)
    _, chosen = teacher_forced(m, b)
    stepped = stacked(step_by_step(m, b)[1])
    real = b.tgt_out != 0
    assert torch.allclose(chosen[real], stepped["source"][real], atol=1e-6)
    assert torch.allclose(chosen.sum(-1), torch.ones(chosen.shape[:2]), atol=1e-6)
    assert not torch.allclose(chosen, mean_last, atol=1e-3)
    heads = []
    for h in range(1, 5):
        m.choose_attention(layer=2, head=h)
        heads.append(teacher_forced(m, b)[1])
    assert torch.allclose(torch.stack(heads).mean(0), mean_last, atol=1e-6)  # the default: the heads' mean
    with pytest.raises(NmtkitError, match="--attention-layer: this model has decoder layers 1..2, not 3"):
        m.choose_attention(layer=3)
    with pytest.raises(NmtkitError, match="--attention-head: this model has heads 1..4, not 5"):
        m.choose_attention(head=5)
