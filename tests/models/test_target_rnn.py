"""Target attention models (target-attn, ftatt/rtatt/bitatt-rnn): causality, sums, forward = step by step."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import BOS, EOS, PAD
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from nmtkit.models.seq2seq import max_lengths
from nmtkit.models.target_rnn import REVERSE_MAX_LEN
from nmtkit.search.beam import beam_search
from nmtkit.search.greedy import greedy_search
from tests.conftest import TINY_CONFIG, forward
from tests.models.decoding import assert_forward_equals_steps, step_by_step

V_SRC, V_TGT = 40, 30
ARCHS = ["target-attn", "ftatt-rnn", "rtatt-rnn", "bitatt-rnn"]
VARIANTS = [(a, "gru") for a in ARCHS] + [("target-attn", "lstm"), ("bitatt-rnn", "lstm"), ("rnnsearch", "lstm"),
                                          ("rnnsearch", "cgru"), ("bitatt-rnn", "cgru")]


def model(arch="target-attn", cell="gru", **over):
    torch.manual_seed(0)
    return build_model({**TINY_CONFIG, "arch": arch, "decoder_cell": cell, "param_init": 0.3, **over},
                       CorpusMeta.text(V_SRC, V_TGT)).eval()


def batch(last_word=None):
    """Three sentence pairs; ``last_word`` replaces the last target word of the first."""
    g = torch.Generator().manual_seed(1)
    src = [torch.randint(4, V_SRC, (n,), generator=g).tolist() for n in (5, 2, 7)]
    tgt = [torch.randint(4, V_TGT, (n,), generator=g).tolist() for n in (4, 6, 1)]
    if last_word is not None:
        tgt[0][-1] = last_word
    return make_batch(src, tgt)


def training_state(m, b):
    """The forward decoder's initial state as training has it: R̃ from the reverse decoder teacher-forced on
    the reference with ``reverse_context: reference``, else what ``encode`` gives (the greedy reverse pass)."""
    if getattr(m, "reverse", None) is None or m.context_from != "reference":
        return m.encode(b)
    state = m.source(b)
    return m.decoder.start(state, m.reverse_context(state, b.reversed_target()[0]))


@pytest.mark.parametrize("arch,cell,over", [(a, c, {}) for a, c in VARIANTS] + [
    (a, c, {"reverse_context": "reference"}) for a, c in [("rtatt-rnn", "gru"), ("bitatt-rnn", "gru"), ("bitatt-rnn", "lstm")]])
def test_teacher_forced_forward_equals_step_by_step_decoding(arch, cell, over):
    m, b = model(arch, cell, **over), batch()
    assert_forward_equals_steps(m, b, state=training_state(m, b))


@pytest.mark.parametrize("arch", ["target-attn", "bitatt-rnn"])
def test_target_weights_sum_to_one_over_exactly_the_previous_states(arch):
    m, b = model(arch), batch()
    with torch.no_grad():
        _, att = forward(m, b)
    beta = att["target"]  # [B, T, T]: row j over s_1..s_j (the states before step j + 1)
    assert beta.shape == (3, b.tgt_in.size(1), b.tgt_in.size(1))
    assert (beta[:, 0] == 0).all()  # no target context at the first step (footnote 5)
    for j in range(1, beta.size(1)):
        assert torch.allclose(beta[:, j, :j].sum(-1), torch.ones(3), atol=1e-6)
        assert (beta[:, j, j:] == 0).all()


@pytest.mark.parametrize("arch", ["target-attn", "ftatt-rnn"])
def test_changing_later_targets_never_changes_earlier_scores(arch):
    m, b = model(arch), batch()
    changed = b.tgt_in.clone()
    changed[:, 3:] = 5
    with torch.no_grad():
        l1, a1 = forward(m, b)
        l2, a2 = forward(m, b.with_target(changed))
    assert torch.equal(l1[:, :3], l2[:, :3]) and torch.equal(a1["target"][:, :3], a2["target"][:, :3])
    assert (l1[:, 3] - l2[:, 3]).abs().max() > 1e-4


def test_in_bitatt_only_the_reverse_decoder_sees_the_future():
    """The forward decoder is causal given R̃; R̃ (the reverse decoder) reads the whole reference."""
    m, b = model("bitatt-rnn"), batch()
    other = batch(last_word=int(b.tgt_out[0, 3]) % 20 + 5)  # y_4 of sentence 0 changes
    assert not torch.equal(other.tgt_in[0, 4], b.tgt_in[0, 4])
    with torch.no_grad():
        state = m.source(b)
        future = m.reverse_context(state, b.reversed_target()[0])
        fixed = m.decoder.start(state, future)
        l1, _, _ = m.decoder(m.tgt_emb(b.tgt_in), fixed)
        l2, _, _ = m.decoder(m.tgt_emb(other.tgt_in), fixed)
        assert torch.equal(l1[:, :4], l2[:, :4])  # causal forward decoder
        assert not torch.allclose(m.reverse_context(state, other.reversed_target()[0])[0], future[0])
        assert torch.allclose(m.reverse_context(state, other.reversed_target()[0])[1:], future[1:])


def test_reverse_targets_read_the_reference_right_to_left():
    b = make_batch([[5], [5]], [[4, 5, 6], [7]])
    rev_in, rev_out = b.reversed_target()
    assert rev_in.tolist() == [[BOS, 6, 5, 4], [BOS, 7, 0, 0]]
    assert rev_out.tolist() == [[6, 5, 4, 3], [7, 3, 0, 0]]


def reversed_by_hand(b):
    """``<s> y_T .. y_1`` and ``y_T .. y_1 </s>`` of every target of ``b``, built from its words (``tgt_out`` before
    ``</s>``), not by ``Batch.reversed_target``: each sentence reversed within its own length, padding after."""
    width = b.tgt_out.size(1)
    rows = [row[row != PAD][:-1].flip(0).tolist() for row in b.tgt_out]
    rev_in = torch.tensor([[BOS] + r + [PAD] * (width - 1 - len(r)) for r in rows])
    rev_out = torch.tensor([r + [EOS] + [PAD] * (width - 1 - len(r)) for r in rows])
    return rev_in, rev_out


@pytest.mark.parametrize("arch,cell,context", [("rtatt-rnn", "gru", "greedy"), ("rtatt-rnn", "gru", "reference"),
                                               ("bitatt-rnn", "gru", "reference"), ("bitatt-rnn", "lstm", "greedy"),
                                               ("bitatt-rnn", "cgru", "reference")])
def test_the_reverse_decoder_is_teacher_forced_on_the_reversed_target(arch, cell, context):
    """The auxiliary logits (the second sum of Eq. 20 / 23) are the reverse decoder's (Eq. 15-18) stepped alone over
    ``<s> y_T .. y_1``, each sentence of the batch (4, 6 and 1 words) reversed within its own length, and their gold
    is ``y_T .. y_1 </s>``, padded after."""
    m, b = model(arch, cell, reverse_context=context), batch()
    rev_in, rev_out = reversed_by_hand(b)
    with torch.no_grad():
        (aux_logits, gold), = m(b).auxiliary
        state, steps = m.reverse.start(m.source(b)), []
        for k in range(rev_in.size(1)):
            logits, state, _ = m.reverse.step(m.tgt_emb(rev_in[:, k]), state)
            steps.append(logits)
    assert torch.equal(gold, rev_out)
    real = rev_out != PAD
    assert torch.allclose(aux_logits[real], torch.stack(steps, 1)[real], atol=1e-5)


@pytest.mark.parametrize("arch,context", [("rtatt-rnn", "reference"), ("bitatt-rnn", "reference"),
                                          ("bitatt-rnn", "greedy")])
def test_joint_loss_covers_the_reverse_decoder(arch, context):
    m, b = model(arch, reverse_context=context).train(), batch()
    out = m(b)
    logits, ((aux_logits, gold),) = out.logits, out.auxiliary
    assert aux_logits.shape == logits.shape and torch.equal(gold, b.reversed_target()[1])
    (logits.sum() + aux_logits.sum()).backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


def test_two_pass_decoding_uses_the_reverse_pass():
    m, b = model("bitatt-rnn"), batch()
    with torch.no_grad():
        lp1, _, _ = m.decode_step(torch.full((3,), BOS), m.encode(b))
        m.reverse.readout.output.bias.add_(torch.linspace(-3, 3, V_TGT))  # other greedy reverse words -> other R̃
        lp2, _, _ = m.decode_step(torch.full((3,), BOS), m.encode(b))
    assert (lp1 - lp2).abs().max() > 1e-4


def test_greedy_reverse_pass_stops_at_end_of_sentence():
    """R̃ is the mean of the states up to the one that emits </s>: with </s> always the best word, one state."""
    m, b = model("rtatt-rnn"), batch()
    with torch.no_grad():
        m.reverse.readout.output.bias[EOS] = 100.0
        state = m.source(b)
        future = m.reverse_context(state)
        first = m.reverse.start(state)
        _, first, _ = m.reverse.step(m.tgt_emb(torch.full((3,), BOS)), first)
    assert torch.allclose(future, first["reverse_hidden"], atol=1e-6)


def test_r_tilde_is_the_mean_of_the_reverse_states_of_each_sentences_own_steps_eq_19():
    """R̃ = (1/K) Σ_k s←_k over the sentence's own K steps: teacher-forced on ``<s> y_T .. y_1``, K = T + 1 (the
    padding after it left out); greedily, the states up to the one that emits </s> or ends the pass at its limit
    (a·|x| + b + 1 steps), both stepped here by hand, each sentence alone."""
    m, b = model("rtatt-rnn"), batch()
    rev_in, _ = reversed_by_hand(b)
    with torch.no_grad():
        state, states = m.reverse.start(m.source(b)), []
        for k in range(rev_in.size(1)):
            _, state, _ = m.reverse.step(m.tgt_emb(rev_in[:, k]), state)
            states.append(state["reverse_hidden"])
        forced = m.reverse_context(m.source(b), rev_in)
        for i, n in enumerate((rev_in != PAD).sum(1).tolist()):
            assert torch.allclose(forced[i], torch.stack(states[:n]).mean(0)[i], atol=1e-6)
        greedy = m.reverse_context(m.source(b))
        for i, n in enumerate(b["src"].lengths.tolist()):
            state = m.reverse.start(m.source(make_batch([b["src"].data[i, :n - 1].tolist()])))
            prev, states = torch.tensor([BOS]), []
            while len(states) < int(max_lengths(state["mask"].sum(1), *REVERSE_MAX_LEN)) + 1:
                logits, state, _ = m.reverse.step(m.tgt_emb(prev), state)
                states.append(state["reverse_hidden"][0])
                prev = logits.argmax(-1)
                if prev.item() == EOS:
                    break
            assert len(states) > 2 and torch.allclose(greedy[i], torch.stack(states).mean(0), atol=1e-6)


@pytest.mark.parametrize("eos_bias", [-0.2, -0.15, -0.1])
def test_greedy_reverse_pass_of_a_sentence_does_not_depend_on_its_batch(eos_bias):
    """Sentences leave the reverse pass when they end or reach their own length limit: each R̃ is the one
    the sentence gets alone. With these biases the sentences (6, 3 and 8 source tokens) end at the first step or
    run to their limits of 21, 15 and 25 steps: all at their limits, one early, two early."""
    m, b = model("rtatt-rnn"), batch()
    with torch.no_grad():
        m.reverse.readout.output.bias[EOS] += eos_bias
        together = m.reverse_context(m.source(b))
        for i, n in enumerate(b["src"].lengths.tolist()):
            alone = m.reverse_context(m.source(make_batch([b["src"].data[i, :n - 1].tolist()])))
            assert torch.allclose(together[i], alone[0], atol=1e-6)


@pytest.mark.parametrize("arch", ARCHS)
def test_beam_one_equals_greedy(arch):
    m, b = model(arch), batch()
    greedy = greedy_search(m, b, attention=True)
    beam = beam_search(m, b, beam_size=1, attention=True)
    for g, h in zip(greedy, beam):
        assert g[0].tokens == h[0].tokens and abs(g[0].logprob - h[0].logprob) < 1e-4
        for name in g[0].attention:
            assert g[0].attention[name].shape == h[0].attention[name].shape
            assert abs(g[0].attention[name] - h[0].attention[name]).max() < 1e-5


def test_target_memory_grows_one_state_per_step_and_follows_the_beams():
    m, b = model("target-attn"), batch()
    with torch.no_grad():
        state = m.encode(b)
        for t in range(1, 4):
            _, state, att = m.decode_step(torch.full((3,), 5), state)
            assert state["tmemory"].shape[:2] == (3, t) and state["tkeys"].shape[:2] == (3, t)
            assert torch.equal(state["tmemory"][:, -1], state["hidden"])
        order = torch.tensor([2, 0, 1])
        moved = state.reorder(order)
    assert torch.equal(moved["tmemory"], state["tmemory"][order])
    assert torch.equal(moved["tkeys"], state["tkeys"][order])


def test_beam_search_writes_target_attention_rows_over_previous_outputs():
    m, b = model("bitatt-rnn"), batch()
    hyps = beam_search(m, b, beam_size=3, attention=True)
    for h in (hs[0] for hs in hyps):
        n = len(h.tokens) + 1
        assert h.attention["target"].shape == (n, n - 1)
        for j in range(1, n):
            assert abs(h.attention["target"][j, :j].sum() - 1) < 1e-5


@pytest.mark.parametrize("arch", ARCHS + ["rnnsearch"])
def test_scoring_equals_decoding_from_the_source_alone(arch):
    """score_logits (perplexity, Eq. 13) gives what decode_step gives from encode: for rtatt/bitatt-rnn,
    R̃ of the greedy reverse pass (§3.3), not of the reference."""
    m, b = model(arch), batch()
    with torch.no_grad():
        scored = torch.log_softmax(m.score_logits(b), -1)
        decoded, _ = step_by_step(m, b)
    mask = b.tgt_out != 0
    assert torch.allclose(scored[mask], decoded[mask], atol=1e-5)


@pytest.mark.parametrize("arch", ["rtatt-rnn", "bitatt-rnn"])
def test_scoring_does_not_see_the_reference_through_the_reverse_decoder(arch):
    m, b = model(arch, reverse_context="reference"), batch()
    other = batch(last_word=int(b.tgt_out[0, 3]) % 20 + 5)  # y_4 of sentence 0 changes
    with torch.no_grad():
        assert torch.equal(m.score_logits(b)[0, :4], m.score_logits(other)[0, :4])
        assert not torch.allclose(m(b).logits[0, :4], m(other).logits[0, :4])  # training's R̃ reads the reference


def test_greedy_reverse_context_trains_the_forward_decoder_as_it_decodes():
    """reverse_context: greedy gives the forward decoder R̃ of the greedy reverse pass in training too, so the
    teacher-forced forward pass is what scoring and decoding compute, and never reads the reference's R̃."""
    m, b = model("bitatt-rnn", reverse_context="greedy"), batch()
    other = batch(last_word=int(b.tgt_out[0, 3]) % 20 + 5)
    with torch.no_grad():
        assert torch.allclose(m(b).logits, m.score_logits(b), atol=1e-6)
        assert torch.equal(m(b).logits[0, :4], m(other).logits[0, :4])
    with pytest.raises(NmtkitError, match="--arch rtatt-rnn: unknown reverse_context"):
        model("rtatt-rnn", reverse_context="oracle")
