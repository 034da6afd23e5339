"""Beam search against a scripted model whose log-probabilities are known exactly."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.vocab import EOS
from nmtkit.models.attention import MLPAttention
from nmtkit.models.combination import FlatCombination
from nmtkit.models.luong_attention import LuongAttention
from nmtkit.models.multihead import MultiHeadAttention
from nmtkit.models.state import DecoderState
from nmtkit.search import beam_search, greedy_search
from tests.models.test_contract import COMBINATIONS, TWO_TRANSFORMERS, batch, tiny_or_ensemble
from tests.search.host_reads import HostReads, LateEnd
from tests.search.scripted import ScriptedModel, limit, source_attention, sources

# Sentence 0: the most probable output is empty, but per token [4, 7] is better. Every step has at
# least 3 candidates other than </s>, so a beam of 3 finds these three first (others: random).
#   []      p = .4             log p = -0.92, / 1 = -0.92
#   [4, 7]  p = .3 · .9 = .27  log p = -1.31, / 3 = -0.44
#   [5]     p = .2 · .7 = .14  log p = -1.97, / 2 = -0.98
LENGTH_SCRIPT = {(): {EOS: .4, 4: .3, 5: .2, 6: .1}, (4,): {7: .9, 8: .1}, (5,): {EOS: .7, 7: .3},
                 (6,): {8: .75, 9: .25}, (4, 7): {EOS: 1.0}}


@pytest.mark.parametrize("beam, alpha", [(4, 1.0), (5, 0.0), (5, 0.6)])
def test_every_n_best_hypothesis_is_rescored_exactly_by_the_model(beam, alpha):
    """Tokens, log-probability, score and attention of each n-best entry agree with the model."""
    model, src = ScriptedModel(), sources(36)
    hyps = beam_search(model, make_batch(src), beam, beam, 1.5, 2, alpha, attention=True)
    width = max(map(len, src)) + 1
    at_limit = 0
    for i, (s, n_best) in enumerate(zip(src, hyps)):
        assert len(n_best) == beam
        for h in n_best:
            assert h.logprob == pytest.approx(model.score(i, h.tokens), abs=1e-4)
            assert h.score == pytest.approx(h.logprob / (len(h.tokens) + 1) ** alpha, abs=1e-6)
            assert torch.equal(torch.from_numpy(h.attention["source"]), source_attention(s, h.tokens, width))
            assert len(h.tokens) <= limit(s, 1.5, 2)
            at_limit += len(h.tokens) == limit(s, 1.5, 2)
    assert at_limit > 0  # some hypotheses were cut by the length limit


@pytest.mark.parametrize("alpha, order", [(0.0, [[], [4, 7], [5]]), (1.0, [[4, 7], [], [5]])])
def test_length_penalty_changes_the_ranking(alpha, order):
    """alpha 0 ranks by probability (the empty output first); alpha 1 by probability per token."""
    model = ScriptedModel(scripts={0: LENGTH_SCRIPT})
    hyps = beam_search(model, make_batch([[4, 5, 6], [7]]), 3, 3, 1.5, 10, alpha)[0]
    assert [h.tokens for h in hyps] == order
    for h in hyps:
        assert h.logprob == pytest.approx(model.score(0, h.tokens), abs=1e-6)
        assert h.score == pytest.approx(h.logprob / (len(h.tokens) + 1) ** alpha, abs=1e-6)


def test_a_sentence_ends_at_the_step_its_kth_hypothesis_finishes():
    """Both hypotheses of a beam of 2 finish at step 2 ([4] and [5], -1.20 / 2 = -0.60 each): the search of the
    sentence ends there, though [4, 6], one step on, would score better per token (-1.61 / 3 = -0.54)."""
    script = {(): {4: .5, 5: .5}, (4,): {EOS: .6, 6: .4}, (5,): {EOS: .6, 7: .4}, (4, 6): {EOS: 1.0},
              (5, 7): {EOS: 1.0}}
    hyps = beam_search(ScriptedModel(scripts={0: script}), make_batch([[4, 5, 6], [7]]), 2, 2, 1.5, 10, 1.0)[0]
    assert sorted(h.tokens for h in hyps) == [[4], [5]]


def test_n_best_is_distinct_and_sorted_by_score():
    """The finished hypotheses of each sentence are different outputs, best score first."""
    for n_best in beam_search(ScriptedModel(seed=2), make_batch(sources(32, seed=2)), 5, 5, 1.5, 2, 1.0):
        scores = [h.score for h in n_best]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in n_best}) == len(n_best) == 5


def test_n_best_is_a_prefix_of_the_full_list():
    """Asking for fewer hypotheses gives the best of the same list."""
    model, batch = ScriptedModel(), make_batch(sources(32))
    full = beam_search(model, batch, 5, 5, 1.5, 2, 1.0)
    for two, five in zip(beam_search(model, batch, 5, 2, 1.5, 2, 1.0), full):
        assert [h.tokens for h in two] == [h.tokens for h in five[:2]]


def test_beam_one_equals_greedy():
    """A beam of one is greedy search: same tokens, log-probability and attention."""
    model, src = ScriptedModel(), sources(32)
    for g, b in zip(greedy_search(model, make_batch(src), 1.5, 2, attention=True),
                    beam_search(model, make_batch(src), 1, 1, 1.5, 2, 0.0, attention=True)):
        assert b[0].tokens == g[0].tokens
        assert b[0].logprob == pytest.approx(g[0].logprob, abs=1e-5)
        assert (b[0].attention["source"] == g[0].attention["source"]).all()


def test_length_limit_forces_the_end_of_sentence():
    """No hypothesis is longer than the model's max_output_len; those that reach it end there."""
    model, src = ScriptedModel(), sources(32)
    hyps = beam_search(model, make_batch(src), 4, 4, 0.5, 1, 0.0)
    at_limit = 0
    for i, (s, n_best) in enumerate(zip(src, hyps)):
        for h in n_best:
            assert len(h.tokens) <= limit(s, 0.5, 1)
            assert h.logprob == pytest.approx(model.score(i, h.tokens), abs=1e-4)
            at_limit += len(h.tokens) == limit(s, 0.5, 1)
    assert at_limit > len(src)


def test_a_finished_candidate_never_continues_as_a_live_hypothesis():
    """With fewer live candidates than beams (most words impossible), the beam keeps dead slots, not
    hypotheses that already emitted </s>."""
    script = {(): {EOS: .5, 4: .2, 5: .3}, (4,): {EOS: 1.}, (5,): {6: 1.}, (5, 6): {EOS: .9, 7: .1}, (5, 6, 7): {EOS: 1.}}
    hyps = beam_search(ScriptedModel(scripts={0: script}), make_batch([[4, 5, 6], [7]]), 4, 4, 1.5, 10, 0.0)[0]
    assert sorted(tuple(h.tokens) for h in hyps) == [(), (4,), (5, 6), (5, 6, 7)]
    assert all(EOS not in h.tokens for h in hyps)


def test_a_step_reads_the_device_once_until_hypotheses_finish():
    """Before the length limit, each step reads one pair of flags (no finished candidate, no done sentence); the
    step at the limit reads more, to finalise."""
    reads = HostReads("nmtkit/search/beam.py")
    with reads:
        hyps = beam_search(LateEnd(reads), make_batch([[4, 5, 6, 7]] * 6), 3, 3, 1.5, 2, 1.0)
    assert all(len(h[0].tokens) == limit([4, 5, 6, 7], 1.5, 2) for h in hyps)
    assert len(reads.steps) == limit([4, 5, 6, 7], 1.5, 2) + 1
    assert reads.steps[:-1] == [1] * (len(reads.steps) - 1)
    assert reads.steps[-1] > 1


#: every architecture at each combination, and flat's and hierarchical's terms of their own (a sentinel, the offsets)
BEAM_CASES = [*COMBINATIONS, ("multi-source", {"combination": "flat", "sentinel": True, "balance_encoders": True}),
              ("multi-source", {"sentinel": True}), (TWO_TRANSFORMERS, {})]


@pytest.mark.parametrize("arch,over", BEAM_CASES,
                         ids=[" ".join([arch, *(f"{k}={v}" for k, v in over.items())]) for arch, over in BEAM_CASES])
def test_a_beam_reads_its_sentence_s_memory_once_and_finds_what_reading_it_per_hypothesis_finds(arch, over,
                                                                                               monkeypatch):
    m, b = tiny_or_ensemble(arch, **over), batch()
    shared, beams, once = [], [], []

    def attend_memory(att, x, keys_values, *rest):  # (records whether rows shared a sentence's memory)
        shared.append(x.size(0) != keys_values[0].size(0))
        return attend(att, x, keys_values, *rest)
    attend = MultiHeadAttention.attend_memory
    monkeypatch.setattr(MultiHeadAttention, "attend_memory", attend_memory)

    def additive(att, query, keys, *rest):  # (the same, for the RNNs' additive attention)
        shared.append(query.size(0) != keys.size(0))
        return forward(att, query, keys, *rest)
    forward = MLPAttention.forward
    monkeypatch.setattr(MLPAttention, "forward", additive)

    def luong(att, query, keys, *rest):  # (and for Luong's)
        shared.append(query.size(0) != keys.size(0))
        return luong_forward(att, query, keys, *rest)
    luong_forward = LuongAttention.forward
    monkeypatch.setattr(LuongAttention, "forward", luong)

    def flat(combination, s, get, *rest):  # (and for flat's joint attention over every encoder's states)
        shared.append(s.size(0) != get("keys").size(0))
        return flat_forward(combination, s, get, *rest)
    flat_forward = FlatCombination.forward
    monkeypatch.setattr(FlatCombination, "forward", flat)

    def decode_step(prev, state):  # (records how the rows of every step's state are said to be grouped, and whether
        beams.append(state.beams)  # it holds the encoder's states once per sentence)
        once.append(bool(state.shared) and all(state[n].size(0) * state.beams == state.batch_size for n in state.shared))
        return step(prev, state)
    step, m.decode_step = m.decode_step, decode_step
    with torch.no_grad():
        grouped = beam_search(m, b, beam_size=3, n_best=3, attention=True)
        reorder = DecoderState.reorder  # (rows never said to be grouped: every row reads its own memory)
        monkeypatch.setattr(DecoderState, "reorder", lambda state, index, within_sentences=False, beams=1:
                            reorder(state, index, within_sentences))
        shared_before, shared[:], beams_before, beams[:], once_before = list(shared), [], list(beams), [], list(once)
        per_row = beam_search(m, b, beam_size=3, n_best=3, attention=True)
    assert any(shared_before) and not any(shared)
    assert all(once_before)
    assert set(beams_before) == {3} and set(beams) == {1}
    for want, got in zip(per_row, grouped, strict=True):
        assert [h.tokens for h in got] == [h.tokens for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)
        for h, g in zip(want, got):
            for name in h.attention:
                torch.testing.assert_close(g.attention[name], h.attention[name], atol=1e-5, rtol=1e-5)
