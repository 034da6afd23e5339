"""Word alignments from attention: each target token's most attended source token (never </s>), lifted to words."""
from types import SimpleNamespace

import numpy as np
import pytest

from nmtkit.data.vocab import SentencePieceVocab
from nmtkit.errors import NmtkitError
from nmtkit.search.alignment import Aligner, attention_links, moses, source_attention
from nmtkit.search.hypothesis import Hypothesis
from tests.data.test_vocab import TEXT


def test_each_target_token_links_its_most_attended_source_word_once():
    weights = np.array([[0.7, 0.1, 0.1, 0.1],    # target token 0 -> source token 0
                        [0.1, 0.6, 0.2, 0.1],    # 1 -> 1
                        [0.1, 0.5, 0.3, 0.1],    # 2 -> 1 (the same words as token 1: one link)
                        [0.3, 0.1, 0.2, 0.4],    # 3 -> the input's </s> (column 3) is never linked: its best, 0
                        [0.0, 0.0, 0.0, 1.0]])   # the output's </s> row: not a word
    links = attention_links(weights, src_words=[0, 1, 1], tgt_words=[0, 1, 1, 2])
    assert links == [(0, 0), (0, 2), (1, 1)] and moses(links) == "0-0 0-2 1-1"
    assert attention_links(weights, [0, 1, 2], []) == [] and moses([]) == ""
    assert attention_links(weights, [0, 1, 1], [-1, -1, -1, -1]) == []  # (tokens of no word: an empty output)
    assert attention_links(weights, [0, 1, 1], [0, -1, 0, -1]) == [(0, 0), (1, 0)]


def test_subwords_on_both_sides_are_joined_into_the_words_they_make():
    """Source tokens 0-1 make word 0 and token 2 word 1; target tokens 0-1 ("▁fort" "y") make one word: the target
    word attends to source word 1 through its second piece, and to word 0 through its first."""
    weights = np.array([[0.1, 0.7, 0.1, 0.1],   # target token 0 -> source token 1 (word 0)
                        [0.1, 0.1, 0.7, 0.1],   # target token 1 (word 0) -> source token 2 (word 1)
                        [0.0, 0.0, 0.0, 1.0]])  # </s>
    assert attention_links(weights, src_words=[0, 0, 1], tgt_words=[0, 0]) == [(0, 0), (1, 0)]

    class Pieces:
        """A vocabulary whose every two tokens make a word."""

        def word_index(self, ids):
            return [k // 2 for k in range(len(ids))]

        input_word_index = word_index

    aligner = Aligner("src", Pieces(), Pieces())
    output = SimpleNamespace(tokens=[7, 8], attention={"source": weights})
    assert aligner({"src": [4, 5, 6]}, output) == "0-0 1-0"


def test_a_model_without_source_attention_is_one_line_for_alignments_and_replace_unk():
    """(a model whose decoding returns no attention, as docs/adding-a-model.md allows, crashed with KeyError)"""
    bare = Hypothesis([5, 6], -1.0, -1.0, {})
    for option in ("--alignments", "--replace-unk"):
        with pytest.raises(NmtkitError, match=f"^{option}: this model gives no 'source' attention") as e:
            source_attention(bare, option)
        assert e.value.exit_code == 2
    vocab = SimpleNamespace(word_index=lambda tokens: list(range(len(tokens))),
                            input_word_index=lambda tokens: list(range(len(tokens))))
    with pytest.raises(NmtkitError, match="^--alignments: this model gives no 'source' attention"):
        Aligner("src", vocab, vocab)({"src": [4, 5]}, bare)
    weights = np.eye(3)
    assert source_attention(Hypothesis([5, 6], -1.0, -1.0, {"source": weights}), "--alignments") is weights


def test_source_words_are_the_inputs_words_where_unknown_characters_are_decoded_apart(tmp_path):
    """(source words were counted on the decoded input, where each <unk> is a word " ⁇ " of its own: links named
    source words past the input's, as 4-1 for an input of 4 words)"""
    (tmp_path / "t.txt").write_text("\n".join(TEXT) + "\n")
    vocab = SentencePieceVocab.train([tmp_path / "t.txt"], 30)
    src = vocab.encode("catx zzz dog")
    weights = np.eye(len(src) + 1)[:, :len(src) + 1]  # (target token k attends source token k; then </s>)
    output = SimpleNamespace(tokens=vocab.encode("the cat sat on the mat")[:len(src)], attention={"source": weights})
    links = [tuple(map(int, link.split("-"))) for link in Aligner("src", vocab, vocab)({"src": src}, output).split()]
    assert max(i for i, _ in links) == 2 and {i for i, _ in links} == {0, 1, 2}
