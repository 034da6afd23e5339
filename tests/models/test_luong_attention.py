"""Luong attention: every score against its equation, windows, masks, local-p vs global."""
import pytest
import torch

from nmtkit.models.luong_attention import LuongAttention

B, T, S, Q = 2, 3, 6, 5


def inputs(memory_size=Q):
    g = torch.Generator().manual_seed(0)
    query, memory = torch.randn(B, T, Q, generator=g), torch.randn(B, S, memory_size, generator=g)
    mask = torch.tensor([[True] * S, [True] * 4 + [False] * 2])
    return query, memory, mask


def attend(att, query, memory, mask, steps=None):
    return att(query, att.keys(memory), memory, mask, steps)


@pytest.mark.parametrize("score", ["dot", "general", "concat", "location"])
def test_global_scores_follow_their_equations(score):
    torch.manual_seed(0)
    att = LuongAttention(Q, Q, score, max_positions=8)
    query, memory, mask = inputs()
    ctx, w = attend(att, query, memory, mask)
    for b in range(B):
        n = int(mask[b].sum())
        for t in range(T):
            h, hs = query[b, t], memory[b, :n]
            if score == "dot":
                e = hs @ h
            elif score == "general":
                e = hs @ att.w_a.weight.t() @ h
            elif score == "concat":
                e = torch.stack([att.v_a.weight[0] @ torch.tanh(att.w_q.weight @ h + att.w_k.weight @ x + att.w_k.bias)
                                 for x in hs])
            else:
                e = (att.w_loc.weight @ h + att.w_loc.bias)[:n]
            a = torch.softmax(e, 0)
            assert torch.allclose(w[b, t, :n], a, atol=1e-5)
            assert (w[b, t, n:] == 0).all()
            assert torch.allclose(ctx[b, t], a @ hs, atol=1e-5)


def test_local_m_window_is_centred_on_t_and_clipped():
    att = LuongAttention(Q, Q, "general", "local-m", window=1)
    query, memory, mask = inputs()
    steps = torch.tensor([0, 3, 5])
    _, w = attend(att, query, memory, mask, steps)
    assert torch.allclose(w.sum(-1), torch.ones(B, T), atol=1e-6)  # local-m: no Gaussian
    nonzero = (w > 0)
    assert nonzero[0, 0].tolist() == [True, True, False, False, False, False]
    assert nonzero[0, 1].tolist() == [False, False, True, True, True, False]
    assert nonzero[1, 2].tolist() == [False, False, True, True, False, False]  # p_t clipped to the sentence's end


def test_local_p_weights_are_zero_outside_the_window_and_gaussian_inside():
    torch.manual_seed(1)
    att = LuongAttention(Q, Q, "general", "local-p", window=2)
    query, memory, mask = inputs()
    _, w = attend(att, query, memory, mask)
    p = att.centre(query, torch.arange(T), mask.sum(1))
    s = torch.arange(S).float()
    outside = (s - p.unsqueeze(-1)).abs() > 2
    assert (w[outside] == 0).all() and (w[:, :, 4:][~mask[:, None, 4:].expand(B, T, 2)] == 0).all()
    lengths = mask.sum(1, keepdim=True).float()  # S, the sentence's own length (Eq. 9), padding left out
    by_hand = lengths * torch.sigmoid(torch.tanh(query @ att.w_p.weight.t()) @ att.v_p.weight.t()).squeeze(-1)
    assert torch.allclose(p, by_hand, atol=1e-6) and ((p >= 0) & (p <= lengths)).all()
    g = torch.exp(-((s - p.unsqueeze(-1)) ** 2) / 2)  # sigma = D/2 = 1
    plain = LuongAttention(Q, Q, "general", "global")
    plain.w_a = att.w_a
    scores = plain.scores(query, plain.keys(memory)).masked_fill(outside | ~mask[:, None, :], float("-inf"))
    assert torch.allclose(w, torch.softmax(scores, -1) * g, atol=1e-6)


def test_local_p_with_a_wide_window_equals_global():
    torch.manual_seed(2)
    local = LuongAttention(Q, Q, "general", "local-p", window=10_000)
    glob = LuongAttention(Q, Q, "general", "global")
    glob.w_a = local.w_a
    query, memory, mask = inputs()
    c1, w1 = attend(local, query, memory, mask)
    c2, w2 = attend(glob, query, memory, mask)
    assert torch.allclose(w1, w2, atol=1e-6) and torch.allclose(c1, c2, atol=1e-5)


def test_invalid_combinations():
    with pytest.raises(ValueError, match="--global-attention dot needs the decoder"):
        LuongAttention(4, 6, "dot")
    with pytest.raises(ValueError, match="location"):
        LuongAttention(4, 4, "location", "local-p")
