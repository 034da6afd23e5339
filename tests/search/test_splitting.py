"""Long inputs split at sentence ends: where sentences end, how pieces are packed, and one line's pieces joined."""
import pytest

from nmtkit.data.vocab import WordVocab
from nmtkit.search.hypothesis import Hypothesis
from nmtkit.search.splitting import Splitter, joined, pieces, sentence_ends


def test_sentences_end_at_final_punctuation_before_a_new_word():
    spm = ["\u2581Click", "\u2581OK", ".", "\u2581Then", "\u2581v.", "1", "\u2581save", "!", "\u2581Done", "?"]
    assert sentence_ends(spm) == [3, 8, 10]  # "v." followed by "1" continues its word
    assert sentence_ends(["one", ".", "two", "?", "three"]) == [2, 4]  # a word vocabulary: every token a word


def test_pieces_pack_whole_sentences_and_cut_one_longer_than_the_limit():
    ids = list(range(10))
    assert pieces(ids, [3, 5, 10], limit=5) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert pieces(ids, [2, 4, 6], limit=5) == [[0, 1, 2, 3], [4, 5], [6, 7, 8, 9]]
    assert pieces(ids, [], limit=4) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert sum(pieces(ids, [7], limit=3), []) == ids  # no token lost


def test_a_line_s_outputs_join_its_pieces_in_order():
    a = [Hypothesis([5, 6], -1.0, 0.0), Hypothesis([7], -2.0, 0.0)]
    b = [Hypothesis([8], -0.5, 0.0)]
    first, second = joined([a, b], length_penalty=1.0)
    assert first.tokens == [5, 6, 8] and first.logprob == -1.5 and first.score == pytest.approx(-1.5 / 5)
    assert second.tokens == [7, 8] and second.logprob == -2.5  # the second piece has one: its best again
    assert joined([a, b], length_penalty=0.0)[0].score == -1.5


def test_a_lines_joined_outputs_are_ranked_by_their_score_over_the_whole_line():
    """(joined k-th by k-th, the entries' scores over the line were out of order: -1.2465, -1.2736, -1.2625)"""
    a = [Hypothesis([5], -1.0, -1.0), Hypothesis([6, 7, 8, 9], -1.1, -0.2)]  # (the second: longer, better per token)
    b = [Hypothesis([4], -1.0, -1.0)]
    first, second = joined([a, b], length_penalty=1.0)
    assert first.tokens == [6, 7, 8, 9, 4] and second.tokens == [5, 4] and first.score > second.score


def test_a_word_outside_a_word_vocabulary_still_ends_its_sentence():
    """("seven." is <unk> to the model: the line's own words say where its sentence ends.)"""
    vocab = WordVocab(["one", "two", "three", "four"])
    text = "one seven. two three four"
    inputs = {"src": vocab.encode(text)}
    split = Splitter("src", vocab, 3)
    assert [piece["src"] for piece in split(inputs, text.encode())] == \
        [vocab.encode("one seven."), vocab.encode("two three four")]
    assert [piece["src"] for piece in split(inputs)] == [vocab.encode("one seven. two"), vocab.encode("three four")]
