import torch

from nmtkit.models.attention import MLPAttention, masked_softmax


def test_masked_softmax_sums_to_one_and_ignores_padding():
    scores = torch.randn(3, 5)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    w = masked_softmax(scores, mask)
    assert torch.allclose(w.sum(-1), torch.ones(3))
    assert (w[~mask] == 0).all()
    assert torch.allclose(w[1, :2], torch.softmax(scores[1, :2], -1))


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
