import torch

from nmtkit.models.attention import MLPAttention, TargetAttention, masked_softmax


def test_masked_softmax_sums_to_one_and_ignores_padding():
    scores = torch.randn(3, 5)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    w = masked_softmax(scores, mask)
    assert torch.allclose(w.sum(-1), torch.ones(3))
    assert (w[~mask] == 0).all()
    assert torch.allclose(w[1, :2], torch.softmax(scores[1, :2], -1))
    mask[2] = False  # a row of padding alone (a merged row's empty target memory): no weight anywhere, not uniform
    assert torch.equal(masked_softmax(scores, mask, empty_rows=True)[2], torch.zeros(5))


def test_mlp_attention_matches_bahdanau_formula():
    torch.manual_seed(0)
    att = MLPAttention(query_size=6, memory_size=4, hidden_size=5)
    memory, query = torch.randn(2, 3, 4), torch.randn(2, 6)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    ctx, w = att(query, att.keys(memory), memory, mask)
    for b in range(2):
        n = int(mask[b].sum())
        e = torch.stack([att.v.weight[0] @ torch.tanh(att.query.weight @ query[b] + att.key.weight @ memory[b, j]
                                                       + att.key.bias) for j in range(n)])
        alpha = torch.softmax(e, 0)
        assert torch.allclose(w[b, :n], alpha, atol=1e-6)
        assert torch.allclose(ctx[b], (alpha.unsqueeze(1) * memory[b, :n]).sum(0), atol=1e-6)
    assert w[1, 2] == 0


def test_padding_content_does_not_change_attention():
    torch.manual_seed(0)
    att = MLPAttention(6, 4, 5)
    memory, query = torch.randn(1, 3, 4), torch.randn(1, 6)
    mask = torch.tensor([[True, True, False]])
    a = att(query, att.keys(memory), memory, mask)
    memory2 = memory.clone()
    memory2[0, 2] = 100.0
    b = att(query, att.keys(memory2), memory2, mask)
    assert torch.allclose(a[0], b[0]) and torch.allclose(a[1], b[1])


def test_several_queries_at_once_equal_one_at_a_time():
    """The protocol's time axis: queries [B, T, Q] give what T single queries [B, Q] give."""
    torch.manual_seed(0)
    att = MLPAttention(6, 4, 5)
    memory, queries = torch.randn(2, 3, 4), torch.randn(2, 4, 6)
    mask = torch.tensor([[True, True, True], [True, False, False]])
    ctx, w = att(queries, att.keys(memory), memory, mask)
    assert ctx.shape == (2, 4, 4) and w.shape == (2, 4, 3)
    for t in range(4):
        c1, w1 = att(queries[:, t], att.keys(memory), memory, mask)
        assert torch.allclose(ctx[:, t], c1, atol=1e-6) and torch.allclose(w[:, t], w1, atol=1e-6)


def test_target_attention_memory_grows_and_starts_empty():
    torch.manual_seed(0)
    att = TargetAttention(4, 4, 3)
    s = torch.randn(2, 4)
    memory, keys = att.empty(s)
    ctx, w = att(s, keys, memory)
    assert memory.shape == (2, 0, 4) and w.shape == (2, 0) and (ctx == 0).all()  # footnote 5: no context yet
    for step in range(1, 4):
        memory, keys = att.extend(memory, keys, torch.randn(2, 4))
        assert memory.shape == (2, step, 4) and torch.allclose(keys, att.keys(memory))
    ctx, w = att(s, keys, memory)
    assert torch.allclose(w.sum(-1), torch.ones(2)) and torch.allclose(ctx, (w.unsqueeze(-1) * memory).sum(1))
