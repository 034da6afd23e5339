"""Lexically constrained beam search (Post and Vilar 2018): every output holds its constraints, none changes
without them, an impossible one ends the search with a report, and a sentence's outputs do not depend on its batch."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.vocab import WordVocab
from nmtkit.search.beam import beam_search
from nmtkit.search.constrained import CONSTRAINTS, Progress, constrained_beam_search, flat, phrases_of, unmet
from nmtkit.search.prefix import PREFIX, Prefixed
from nmtkit.search.sources import StreamSources, TextSource
from nmtkit.search.token_costs import TokenCosts
from nmtkit.search.translator import SearchOptions, Translator, search_batch
from tests.models.test_contract import ARCHS, batch, rows_of, tiny

PHRASES = [[[5, 6]], [], [[7], [8, 9, 10]], [[11], [11]]]  # one phrase; none; two; the same word twice


def test_phrases_go_into_one_stream_item_and_back():
    for phrases in PHRASES + [[[4], [5, 6, 7], [8]]]:
        assert phrases_of(flat(phrases)) == phrases
    assert flat([[5], [], [6]]) == [5, 3, 6] and phrases_of([]) == []


def test_progress_counts_met_tokens_and_loses_a_phrase_broken_off():
    phrases = [[5, 6, 7], [6], [9]]
    p = Progress((False, False, False))
    assert p.wanted(phrases) == {5, 6, 9}
    p = p.advance(5, phrases).advance(6, phrases)
    assert (p.current, p.position, p.count(phrases), p.wanted(phrases)) == (0, 2, 2, {7})
    broken = p.advance(9, phrases)  # broken off; the token meets the third phrase
    assert broken.met == (False, False, True) and broken.current == -1 and broken.count(phrases) == 1
    done = p.advance(7, phrases).advance(6, phrases).advance(9, phrases)
    assert done.done and done.count(phrases) == 5
    assert unmet([5, 6, 7, 9], phrases) == [1] and unmet([6, 5, 6, 7, 9], phrases) == []
    assert unmet([11], [[11], [11]]) == [1] and unmet([11, 4, 11], [[11], [11]]) == []


def test_a_phrase_broken_off_falls_back_to_the_longest_end_that_begins_it():
    """(a broken-off phrase restarted from its last token alone: "s s s und" did not hold "s s und", so the search
    wrote it again after a prefix that held it, and unmet named a phrase the output held)"""
    assert unmet([3, 3, 3, 4], [[3, 3, 4]]) == [] and unmet([1, 2, 1, 2, 1, 5], [[1, 2, 1, 5]]) == []
    assert unmet([1, 2, 1, 2, 1, 6], [[1, 2, 1, 5]]) == [0] and unmet([3, 3, 4], [[3, 4, 4]]) == [0]
    p = Progress((False, False)).advance(1, [[1, 2, 7], [2, 8]]).advance(2, [[1, 2, 7], [2, 8]])
    q = p.advance(8, [[1, 2, 7], [2, 8]])  # ("1 2" broken off by 8: "2 8", the other phrase, is met)
    assert q.met == (False, True) and q.current == -1
    r = Progress((False,)).advance(3, [[3, 3, 4]]).advance(3, [[3, 3, 4]]).advance(3, [[3, 3, 4]])
    assert (r.current, r.position) == (0, 2) and r.wanted([[3, 3, 4]]) == {4}


def constrained(m, b, phrases, beam=3, n_best=3):
    with torch.no_grad():
        return constrained_beam_search(m, b, phrases, beam, n_best, max_len_a=0.0, max_len_b=6)


@pytest.mark.parametrize("arch", ARCHS)
def test_every_output_holds_its_constraints_and_none_changes_without_them(arch):
    m, b = tiny(arch), batch()
    found = constrained(m, b, PHRASES)
    for hyps, phrases in zip(found, PHRASES):  # the best holds them; the n-best, those that do first
        complete = [not unmet(h.tokens, phrases) for h in hyps]
        assert len(hyps) == 3 and complete[0] and complete == sorted(complete, reverse=True), (arch, hyps, phrases)
    with torch.no_grad():
        plain = beam_search(m, b, 3, 3, 0.0, 6)
    free = constrained(m, b, [[]] * 4)
    assert [[h.tokens for h in s] for s in free] == [[h.tokens for h in s] for s in plain]
    assert [h.score for s in free for h in s] == pytest.approx([h.score for s in plain for h in s], abs=1e-5)
    assert [h.tokens for h in found[1]] == [h.tokens for h in plain[1]]


@pytest.mark.parametrize("arch", ["rnnsearch", "transformer", "bitatt-rnn"])
def test_a_sentence_s_constrained_outputs_do_not_depend_on_its_batch(arch):
    m, b = tiny(arch), batch()
    together = constrained(m, b, PHRASES)
    for i in range(4):
        alone = constrained(m, rows_of(b, [i]), [PHRASES[i]])[0]
        assert [h.tokens for h in alone] == [h.tokens for h in together[i]]


def test_an_impossible_constraint_ends_the_search_and_is_reported():
    m, b = tiny("rnnsearch"), batch()
    costs = torch.zeros(m.decoder.readout.output.out_features)
    costs[12] = float("inf")  # the model can never write token 12
    found = constrained(TokenCosts(m, costs), b, [[[12]], [[12], [5]], [], [[5]]])
    assert all(len(hyps) >= 1 for hyps in found)
    assert unmet(found[0][0].tokens, [[12]]) == [0] and unmet(found[1][0].tokens, [[12], [5]]) == [0]
    assert unmet(found[3][0].tokens, [[5]]) == [] and all(len(h.tokens) <= 6 for hyps in found for h in hyps)


def test_the_search_of_a_batch_with_constraints_is_constrained():
    """... and a line of it without constraints gets what the plain search gives it, its score too (greedy search's
    for a beam of 1: both normalised by length)."""
    m, b = tiny("rnnsearch"), batch()
    b.inputs[CONSTRAINTS] = make_batch({CONSTRAINTS: [flat(p) for p in PHRASES]})[CONSTRAINTS]
    assert PHRASES[1] == []
    for beam in (1, 3):
        opts = SearchOptions(beam_size=beam, n_best=1, max_len_a=0.0, max_len_b=6)
        found, plain = search_batch(m, b, opts, "cpu"), search_batch(m, batch(), opts, "cpu")
        assert all(unmet(h[0].tokens, p) == [] for h, p in zip(found, PHRASES))
        assert found[1][0].tokens == plain[1][0].tokens
        assert (found[1][0].score, found[1][0].logprob) == pytest.approx((plain[1][0].score, plain[1][0].logprob))


@pytest.mark.parametrize("room", [6, 0])
def test_constraints_are_given_room_after_a_target_prefix(room):
    """A prefix as long as the length limit (6, or b = 0: the prefix's length alone) leaves the constraints their
    tokens after it."""
    m, b = tiny("rnnsearch"), batch()
    prefixes = [[4, 4, 4, 4, 4, 4], [], [5] * 8, []]
    b.inputs[PREFIX] = make_batch({PREFIX: prefixes})[PREFIX]
    with torch.no_grad():
        found = constrained_beam_search(Prefixed(m), b, PHRASES, 3, 3, max_len_a=0.0, max_len_b=room)
    for hyps, prefix, phrases in zip(found, prefixes, PHRASES):
        assert hyps[0].tokens[:len(prefix)] == prefix and unmet(hyps[0].tokens[len(prefix):], phrases) == []


def test_constrained_hypotheses_are_scored_with_the_length_penalty_of_beam_search():
    """score = log p / (|y| + 1)^α, </s> counted, as beam_search scores (α 0.6: neither 0 nor 1)."""
    with torch.no_grad():
        found = constrained_beam_search(tiny("rnnsearch"), batch(), PHRASES, 3, 3, 0.0, 6, length_penalty=0.6)
    for h in (h for hyps in found for h in hyps):
        assert h.score == pytest.approx(h.logprob / (len(h.tokens) + 1) ** 0.6, abs=1e-6)


def test_constraints_longer_than_the_model_can_write_are_cut_at_its_table_and_reported(capsys):
    m, b = tiny("transformer", positions="learned", max_positions=8), batch()  # at most 7 output tokens
    phrases = [[[5, 6, 7, 8, 9]], [[5, 6, 7, 8, 9], [10, 11, 12]], [], [[4]]]
    found = constrained_beam_search(m, b, phrases, 3, 1, max_len_a=0.0, max_len_b=30)
    assert all(len(h[0].tokens) <= 7 for h in found)
    assert unmet(found[0][0].tokens, phrases[0]) == [] and unmet(found[1][0].tokens, phrases[1]) != []
    b.inputs[CONSTRAINTS] = make_batch({CONSTRAINTS: [flat(p) for p in phrases]})[CONSTRAINTS]
    vocab = WordVocab([f"w{k}" for k in range(40)])
    translator = Translator(m, StreamSources([TextSource(vocab)], "in.txt"), vocab, SearchOptions(beam_size=3),
                            "cpu")
    lacks = translator._check_constraints(1, flat(phrases[1]), found[1][0])
    assert "in.txt:2: no output could hold every constraint; the best lacks" in capsys.readouterr().err
    assert lacks == ["w6 w7 w8"]  # (ids 10-12: the words after the 4 special tokens)
    assert translator._check_constraints(0, flat(phrases[0]), found[0][0]) == []
