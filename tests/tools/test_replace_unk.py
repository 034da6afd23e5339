"""UNK replacement: dictionary and copy cases, and inputs that do not belong together."""
import numpy as np
import pytest

from nmtkit.errors import NmtkitError
from nmtkit.search.attention_file import AttentionFile, AttentionWriter
from nmtkit.tools.replace_unk import Counts, replace_file, replace_unks

LEX = {"Haus": "house"}


def test_dictionary_and_copy():
    src = ["das", "Haus", "von", "Müller"]
    att = np.array([[0.7, 0.1, 0.1, 0.1, 0.0],   # the
                    [0.1, 0.8, 0.0, 0.1, 0.0],   # <unk> -> Haus -> house
                    [0.0, 0.1, 0.8, 0.1, 0.0],   # of
                    [0.0, 0.0, 0.1, 0.6, 0.3],   # <unk> -> Müller (no entry: copied)
                    [0.0, 0.0, 0.0, 0.1, 0.9]])  # </s>
    counts = Counts()
    assert replace_unks(["the", "<unk>", "of", "<unk>"], src, att, LEX, counts) == ["the", "house", "of", "Müller"]
    assert (counts.from_dict, counts.copied) == (1, 1)


def test_the_end_of_sentence_column_is_never_chosen():
    att = np.array([[0.2, 0.8], [0.1, 0.9]])
    assert replace_unks(["<unk>"], ["Müller"], att, {}, Counts()) == ["Müller"]


def test_a_source_line_longer_than_the_words_recorded_gives_a_recorded_word(tmp_path):
    """(an input truncated when translated: the attention's last column is its </s>, not the next word of the line)"""
    w = AttentionWriter(tmp_path / "a.h5")
    w.add(0, ["das", "Haus", "</s>"], ["the", "<unk>", "</s>"], {"source": np.array([[.9, .1, 0], [.1, .3, .6],
                                                                                      [0, 0, 1]])})
    w.close()
    with AttentionFile(tmp_path / "a.h5") as f:
        lines, _ = replace_file(["the <unk>"], ["das Haus Müller Schmidt"], f, {}, "hyp", "src")
        assert list(lines) == ["the Haus"]


@pytest.fixture
def attention(tmp_path):
    w = AttentionWriter(tmp_path / "a.h5")
    w.add(0, ["das", "<unk>", "</s>"], ["the", "<unk>", "</s>"], {"source": np.array([[.9, .1, 0], [.2, .7, .1], [0, 0, 1]])})
    w.add(1, [], [], {})
    w.close()
    with AttentionFile(tmp_path / "a.h5") as f:
        yield f


def test_replace_file(attention):
    lines, counts = replace_file(["the <unk>", ""], ["das Schmidt", ""], attention, LEX, "hyp", "src")
    assert list(lines) == ["the Schmidt", ""] and counts.copied == 1 and counts.lines == 2


def test_mismatches_are_errors(attention):
    with pytest.raises(NmtkitError, match="src has 1 lines but .* holds 2 sentences"):
        replace_file([], ["x"], attention, LEX, "hyp", "src")
    with pytest.raises(NmtkitError, match="hyp:1: the hypothesis is not the output recorded"):
        list(replace_file(["a <unk>", ""], ["das Schmidt", ""], attention, LEX, "hyp", "src")[0])
    with pytest.raises(NmtkitError, match="src:1: the source line does not match sentence 0"):
        list(replace_file(["the <unk>", ""], ["ein Schmidt", ""], attention, LEX, "hyp", "src")[0])
    with pytest.raises(NmtkitError, match="src:1: the source line does not match sentence 0"):  # (a word short)
        list(replace_file(["the <unk>", ""], ["das", ""], attention, LEX, "hyp", "src")[0])
    with pytest.raises(NmtkitError, match="hyp:1: the hypothesis is not the output recorded"):  # (its prefix only)
        list(replace_file(["the", ""], ["das Schmidt", ""], attention, LEX, "hyp", "src")[0])
    with pytest.raises(NmtkitError, match="hyp has 1 lines but .* holds 2"):
        list(replace_file(["the <unk>"], ["das Schmidt", ""], attention, LEX, "hyp", "src")[0])
    with pytest.raises(NmtkitError, match="hyp has more lines than the 2 sentences"):
        list(replace_file(["the <unk>", "", "x"], ["das Schmidt", ""], attention, LEX, "hyp", "src")[0])
