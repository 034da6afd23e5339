"""The IBM Model 2 aligner and link counting."""
import random

import numpy as np
import pytest

from nmtkit.errors import NmtkitError
from nmtkit.tools.aligner import chunk_links, count_links, index_corpus, table_entries, train_ibm2, viterbi_links


def planted_corpus(n=600, words=40, seed=3):
    """Source words s_k translate to t_k; targets swap neighbours and gain a filler word 'the'."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        src = [f"s{rng.randrange(words)}" for _ in range(rng.randint(3, 9))]
        tgt = ["t" + w[1:] for w in src]
        for k in range(len(tgt) - 1):
            if rng.random() < 0.2:
                tgt[k], tgt[k + 1] = tgt[k + 1], tgt[k]
        if rng.random() < 0.5:
            tgt.insert(rng.randrange(len(tgt) + 1), "the")
        pairs.append((src, tgt))
    return pairs


@pytest.mark.parametrize("chunk", [2_000_000, 500])  # one chunk, and many
def test_recovers_a_planted_word_mapping(chunk):
    corpus = index_corpus(planted_corpus(), chunk_links=chunk)
    assert (len(corpus.chunks) > 1) == (chunk == 500)
    table, t = train_ibm2(corpus, iterations=5)
    best = {}
    for src, tgt, p in table_entries(corpus, table, t, min_prob=0.0):
        best.setdefault(src, (tgt, p))  # entries come best first per source word
    assert len(best) == 40
    assert all(tgt == "t" + src[1:] and p > 0.5 for src, (tgt, p) in best.items())


def test_viterbi_links_leave_out_the_words_aligned_to_null():
    """The filler 'the' has no source word: NULL takes it (position n, never written as a link)."""
    pairs = planted_corpus(n=200)
    corpus = index_corpus(pairs)
    table, t = train_ibm2(corpus, iterations=5)
    links = viterbi_links(corpus, table, t)
    assert all(i < len(src) and j < len(tgt) for (src, tgt), found in zip(pairs, links) for i, j in found)
    fillers = [(k, j) for k, (_, tgt) in enumerate(pairs) for j, word in enumerate(tgt) if word == "the"]
    linked = {(k, j) for k, found in enumerate(links) for _, j in found}
    assert len(fillers) > 50 and sum(f in linked for f in fillers) < len(fillers) / 2


def test_translation_probabilities_sum_to_one_per_source_word():
    corpus = index_corpus(planted_corpus(n=100))
    table, t = train_ibm2(corpus, iterations=2)
    sums = np.bincount(table.src, weights=t)
    assert np.allclose(sums[sums > 0], 1.0)


def test_diagonal_prior_sums_to_one_and_prefers_the_diagonal():
    corpus = index_corpus([("a b c d".split(), "w x y z".split())])
    links = chunk_links(corpus, corpus.chunks[0], tension=4.0, null_prob=0.1)
    per_row = np.bincount(links.row, weights=links.prior)
    assert np.allclose(per_row, 1.0)
    prior = links.prior.reshape(4, 5)  # 4 target words x (4 source positions + NULL)
    assert np.allclose(prior[:, 4], 0.1)
    assert (prior[:, :4].argmax(1) == np.arange(4)).all()


def test_first_iteration_without_tension_is_ibm1():
    """λ = 0 makes the prior uniform: one EM step from uniform t gives IBM Model 1's expected counts."""
    corpus = index_corpus([("a b".split(), "x".split()), ("a".split(), "x".split())])
    table, t = train_ibm2(corpus, iterations=1, tension=0.0, null_prob=0.0)
    got = {(corpus.src_words[s], corpus.tgt_words[g]): p for s, g, p in zip(table.src, table.tgt, t)
           if s != corpus.null_id}
    assert got == pytest.approx({("a", "x"): 1.0, ("b", "x"): 1.0})


def test_empty_sides_are_skipped_and_nothing_to_align_is_an_error():
    assert len(index_corpus([([], ["x"]), (["a"], ["x"])]).chunks[0][1]) == 1
    with pytest.raises(NmtkitError, match="no sentence pair"):
        train_ibm2(index_corpus([([], ["x"])]))


def test_a_pair_of_more_links_than_a_chunk_is_left_out_and_named():
    """(its links were built whole: a pair of 12,000 words took 12 GB, and one of 20,000 was killed for memory)"""
    corpus = index_corpus([(["a"] * 3, ["x"] * 5), ([], ["x"]), (["a"] * 4, ["x"] * 5), (["b"], ["y"])], chunk_links=20)
    assert corpus.too_long == [3] and corpus.pairs == 2  # (5 × 4 = 20 links fit, 5 × 5 do not)


def test_count_links():
    table = count_links([("a b".split(), "x y".split(), "0-0 1-1"), ("a".split(), "z".split(), "0-0")], "f")
    assert table == {("a", "x"): 0.5, ("b", "y"): 1.0, ("a", "z"): 0.5}
    assert count_links([("a b".split(), "x y".split(), "0-1")], "f") == {("a", "y"): 1.0}  # (source-target)
    with pytest.raises(NmtkitError, match="f:1: bad link '0-5'"):
        count_links([("a".split(), "x".split(), "0-5")], "f")
    with pytest.raises(NmtkitError, match="f:1: bad link 'zz'"):
        count_links([("a".split(), "x".split(), "zz")], "f")


def test_viterbi_links_pick_each_target_word_s_most_probable_source_position():
    pairs = [("das haus".split(), "the house".split()), ("das buch".split(), "the book".split()),
             ("ein buch".split(), "a book".split()), ("haus".split(), "house".split())] * 5
    corpus = index_corpus(pairs)
    table, t = train_ibm2(corpus, iterations=5)
    links = viterbi_links(corpus, table, t)
    assert len(links) == len(pairs) and links[:4] == [[(0, 0), (1, 1)], [(0, 0), (1, 1)], [(0, 0), (1, 1)], [(0, 0)]]
    swapped = index_corpus([("haus das".split(), "the house".split())] + pairs)
    table, t = train_ibm2(swapped, iterations=5)
    assert viterbi_links(swapped, table, t)[0] == [(1, 0), (0, 1)]


def test_a_target_word_equally_probable_from_two_positions_links_to_the_leftmost():
    """λ = 0 and no NULL: both a's explain x equally (t and the prior tie), and the first is taken."""
    corpus = index_corpus([("a a".split(), "x".split())])
    table, t = train_ibm2(corpus, iterations=2, tension=0.0, null_prob=0.0)
    assert viterbi_links(corpus, table, t, tension=0.0, null_prob=0.0) == [[(0, 0)]]
