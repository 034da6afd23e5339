"""Multi-head attention by hand: over a padded memory the explicit softmax (asked for its weights: attention files)
and the fused kernel give the same outputs and hide the padding; causal self-attention, which only runs fused, has
query i attend to keys 0..i; an encoder's self-attention hides its padding."""
import math

import pytest
import torch
from torch.testing import assert_close

from nmtkit.models.multihead import MultiHeadAttention

D, HEADS = 16, 4


def by_hand(att, q, k, v, visible):
    """Each head's softmax over the keys that ``visible(b, i)`` lists for query i of sentence b, one at a time, and
    the output projection: ``[B, T, d]`` and the weights ``[B, heads, T, S]``."""
    B, _, T, d_head = q.shape
    out, weights = torch.zeros(B, HEADS, T, d_head), torch.zeros(B, HEADS, T, k.size(2))
    for b in range(B):
        for i in range(T):
            keys = visible(b, i)
            p = torch.softmax(q[b, :, i:i + 1] @ k[b, :, keys].transpose(-1, -2) / math.sqrt(d_head), -1)
            out[b, :, i] = (p @ v[b, :, keys]).squeeze(1)
            weights[b, :, i, keys] = p.squeeze(1)
    return att.out(out.transpose(1, 2).reshape(B, T, -1)), weights


def split_qkv(att, x):
    return [att._split(t) for t in att.qkv(x).view(x.size(0), x.size(1), 3, -1).unbind(2)]


@torch.no_grad()
def test_explicit_and_fused_attention_over_a_padded_memory_agree_and_hide_the_padding():
    torch.manual_seed(0)
    att = MultiHeadAttention(D, HEADS, self_attention=False).eval()
    x, memory, lengths = torch.randn(3, 5, D), torch.randn(3, 7, D), torch.tensor([7, 3, 1])
    mask = (torch.arange(7) < lengths[:, None])[:, None, None, :]  # [B, 1, 1, S], as the models make it
    kv = att.keys_values(memory)
    want, weights = by_hand(att, att._split(att.q(x)), *kv, lambda b, i: list(range(int(lengths[b]))))
    fused, none = att.attend_memory(x, kv, mask)
    explicit, mean = att.attend_memory(x, kv, mask, weights=True)
    assert none is None
    assert_close(fused, want, atol=1e-5, rtol=1e-5)
    assert_close(explicit, want, atol=1e-5, rtol=1e-5)
    assert_close(mean, weights.mean(1), atol=1e-6, rtol=1e-6)
    for h in range(HEADS):
        assert_close(att.attend_memory(x, kv, mask, weights=True, head=h)[1], weights[:, h], atol=1e-6, rtol=1e-6)
    changed = memory.clone()
    for b, n in enumerate(lengths.tolist()):
        changed[b, n:] = 100.0  # what lies in the padding changes nothing
    for asked in (False, True):
        assert_close(att.attend_memory(x, att.keys_values(changed), mask, asked)[0], want, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_causal_self_attention_sees_the_prefix_only():
    torch.manual_seed(1)
    att = MultiHeadAttention(D, HEADS).eval()
    x = torch.randn(2, 6, D)
    want, _ = by_hand(att, *split_qkv(att, x), lambda b, i: list(range(i + 1)))
    got, (k, v) = att.self_attend(x, causal=True)
    assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert k.shape == v.shape == (2, HEADS, 6, D // HEADS)
    with pytest.raises(ValueError, match="causal self-attention takes no mask"):
        att.self_attend(x, torch.ones(2, 1, 1, 6, dtype=torch.bool), causal=True)
    with pytest.raises(ValueError, match="causal attention runs fused"):
        att.attend(*split_qkv(att, x), None, True, causal=True)


@torch.no_grad()
def test_an_encoders_self_attention_hides_its_padding():
    torch.manual_seed(2)
    att = MultiHeadAttention(D, HEADS).eval()
    x, lengths = torch.randn(3, 5, D), torch.tensor([5, 2, 4])
    mask = (torch.arange(5) < lengths[:, None])[:, None, None, :]
    want, _ = by_hand(att, *split_qkv(att, x), lambda b, i: list(range(int(lengths[b]))))
    got, _ = att.self_attend(x, mask)
    real = torch.arange(5) < lengths[:, None]
    assert_close(got[real], want[real], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("weights", [False, True])
@torch.no_grad()
def test_rows_that_share_a_sentence_read_its_memory_together_as_each_would_alone(weights):
    # 2 sentences × 3 rows (a beam's hypotheses): the memory and mask given once per sentence
    torch.manual_seed(0)
    att = MultiHeadAttention(D, HEADS, self_attention=False).eval()
    x, memory = torch.randn(6, 1, D), torch.randn(2, 7, D)
    mask = (torch.arange(7) < torch.tensor([7, 4])[:, None])[:, None, None, :]
    k, v = att.keys_values(memory)
    per_row = att.attend_memory(x, (k.repeat_interleave(3, 0), v.repeat_interleave(3, 0)),
                                mask.repeat_interleave(3, 0), weights)
    together = att.attend_memory(x, (k, v), mask, weights)
    assert_close(together[0], per_row[0])
    if weights:
        assert together[1].shape == (6, 1, 7) and (together[1][3:, :, 4:] == 0).all()
        assert_close(together[1], per_row[1])
