"""BiTAtt-T (Eq. 24-27): two-pass decoding equals the teacher-forced pass it is scored with, uses the reverse
pass, keeps the forward decoder causal; the memory's two parts in the attention; the joint loss."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import BOS, PAD
from nmtkit.models import build_model
from nmtkit.models.state import DecoderState
from tests.models.decoding import stacked, step_by_step
from tests.models.test_target_rnn import reversed_by_hand
from tests.models.test_transformer import TINY, V_SRC, V_TGT, batch


def model(**over):
    torch.manual_seed(0)
    return build_model({**TINY, "arch": "bitatt-transformer", **over}, CorpusMeta.text(V_SRC, V_TGT)).eval()


def test_two_pass_decoding_equals_the_teacher_forced_pass_over_the_greedy_reverse_states():
    m, b = model(), batch()
    with torch.no_grad(), m.attention_weights(True):
        logits = m.score_logits(b)
        out = m(b)
    lp, steps = step_by_step(m, b)
    att = stacked(steps)
    real = b.tgt_out != 0
    assert torch.allclose(torch.log_softmax(logits, -1)[real], lp[real], atol=1e-5)
    assert torch.allclose(out.logits, logits, atol=1e-6)  # reverse_context greedy: training sees what decoding sees
    assert torch.allclose(out.attention["encoders"][real], att["encoders"][real], atol=1e-6)


def test_the_attention_over_the_memory_splits_into_source_and_reverse_target():
    m, b = model(), batch()
    att = stacked(step_by_step(m, b)[1])
    enc, src = att["encoders"], att["source"]
    assert enc.shape[-1] == 2 and torch.allclose(enc.sum(-1), torch.ones(enc.shape[:2]), atol=1e-5)
    assert torch.allclose(src.sum(-1), enc[..., 0], atol=1e-6) and (enc[..., 1] > 0).all()
    assert src.shape[-1] == b["src"].data.size(1)
    assert m.attention_labels == {"encoders": ("source", "reverse target")}


def test_decoding_uses_the_reverse_pass():
    m, b = model(), batch()
    before, _ = step_by_step(m, b)
    with torch.no_grad():
        bias = m.reverse.layers[0].ffn.outer.bias
        bias.add_(torch.randn_like(bias))
    after, _ = step_by_step(m, b)
    assert not torch.allclose(before, after, atol=1e-3)


@pytest.mark.parametrize("context", ["greedy", "reference"])
def test_the_forward_decoder_is_causal_and_only_the_reference_context_sees_the_future(context):
    m, b = model(reverse_context=context), batch()
    changed = b.tgt_in.clone()
    changed[0, 3] = 5 if changed[0, 3] != 5 else 6
    tgt_out = b.tgt_out.clone()
    tgt_out[0, 2] = changed[0, 3]
    with torch.no_grad():
        l1 = m(b).logits
        l2 = m(make_batch([b["src"].data[i, :int(n) - 1].tolist() for i, n in enumerate(b["src"].lengths)],
                          [row[row != 0][:-1].tolist() for row in tgt_out])).logits
    same_start = torch.allclose(l1[0, :3], l2[0, :3], atol=1e-6)
    assert same_start == (context == "greedy")  # the reference's R_dec holds y_3, read at step 1


def test_the_joint_loss_trains_both_decoders():
    m = model(reverse_context="reference")
    m.train()
    out = m(batch())
    (reverse_logits, gold), = out.auxiliary
    assert reverse_logits.shape[:2] == gold.shape and reverse_logits.size(-1) == V_TGT
    (out.logits.sum() + reverse_logits.sum()).backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


@pytest.mark.parametrize("over", [{"reverse_context": "greedy"}, {"reverse_context": "reference"},
                                  {"reverse_context": "reference", "norm": "pre", "positions": "learned"}])
def test_the_reverse_decoder_is_teacher_forced_on_the_reversed_target(over):
    """The auxiliary logits (the second part of Eq. 27) are the reverse stack's (R_dec, Eq. 24) stepped alone over
    ``<s> y_T .. y_1`` at positions 0, 1, ..., each sentence of the batch (4, 6 and 1 words) reversed within its own
    length, and their gold is ``y_T .. y_1 </s>``, padded after."""
    m, b = model(**over), batch()
    rev_in, rev_out = reversed_by_hand(b)
    with torch.no_grad():
        (aux_logits, gold), = m(b).auxiliary
        h_enc, mask = m._encode(b)
        tensors = m.reverse.start(m.reverse.memory(h_enc), mask)
        state, steps = DecoderState(tensors, m.reverse.statics(tensors)), []
        for t in range(rev_in.size(1)):
            h, updates, _ = m.reverse.step(m._embed(m.tgt_emb, rev_in[:, t:t + 1], offset=t), state)
            state = state.replace(**updates)
            steps.append(m.output(h))
    assert torch.equal(gold, rev_out)
    real = rev_out != PAD
    assert torch.allclose(aux_logits[real], torch.stack(steps, 1)[real], atol=1e-5)


def test_the_greedy_reverse_states_are_the_reverse_decoder_teacher_forced_on_its_own_greedy_words():
    """R_dec of the greedy pass (Eq. 24) is what the reverse decoder computes teacher-forced on ``<s>`` and the
    words the pass chose (each the argmax of the step before): the same positions, the same causal states."""
    m, b = model(), batch()
    with torch.no_grad():
        h, mask = m._encode(b)
        r_dec, r_mask = m._reverse_greedy(h, mask, b["src"].lengths)
        chosen = m.output(r_dec).argmax(-1)
        reverse_in = torch.cat([torch.full_like(chosen[:, :1], BOS), chosen[:, :-1]], 1).masked_fill(~r_mask, PAD)
        _, forced = m._reverse_forced(h, mask, reverse_in)
    assert r_mask.sum(1).min() > 2 and torch.allclose(forced[r_mask], r_dec[r_mask], atol=1e-5)


def test_the_greedy_reverse_pass_of_a_sentence_does_not_depend_on_its_batch():
    m, b = model(), batch()
    with torch.no_grad():
        h, mask = m._encode(b)
        r, r_mask = m._reverse_greedy(h, mask, b["src"].lengths)
        alone = make_batch([b["src"].data[1, :int(b["src"].lengths[1]) - 1].tolist()], [[4]])
        h1, mask1 = m._encode(alone)
        r1, r_mask1 = m._reverse_greedy(h1, mask1, alone["src"].lengths)
    k = int(r_mask1.sum())
    assert int(r_mask[1].sum()) == k and torch.allclose(r[1, :k], r1[0, :k], atol=1e-5)
