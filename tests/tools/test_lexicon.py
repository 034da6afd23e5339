"""Reading lexical tables in nmtkit, fast_align and eflomal formats."""
import pytest

from nmtkit.errors import NmtkitError
from nmtkit.tools.lexicon import load_lexicon, load_translations, write_table


def test_nmtkit_table_round_trip(tmp_path):
    with open(tmp_path / "lex.tsv", "w") as f:
        assert write_table(f, [("Haus", "house", 0.7), ("Haus", "home", 0.2), ("rot", "red", 1.0)]) == 3
    assert load_lexicon(tmp_path / "lex.tsv") == {"Haus": "house", "rot": "red"}


def test_fast_align_log_probabilities_and_null(tmp_path):
    (tmp_path / "fa").write_text("<eps>\tder\t-0.1\nHaus\thome\t-2.3\nHaus\thouse\t-0.4\n")
    assert load_lexicon(tmp_path / "fa") == {"Haus": "house"}


def test_eflomal_priors_and_plain_pairs(tmp_path):
    (tmp_path / "pri").write_text("LEX\tHaus\thome\t2\nLEX\tHaus\thouse\t9\nHMMF\t1\t4\nFERF\tHaus\t1\t3\n")
    assert load_lexicon(tmp_path / "pri") == {"Haus": "house"}
    (tmp_path / "pairs").write_text("Haus house\n\nHaus home\n")
    assert load_lexicon(tmp_path / "pairs") == {"Haus": "house"}  # the first entry wins


def test_the_best_translations_of_each_word_best_first(tmp_path):
    (tmp_path / "fa").write_text("Haus\thut\t-5\nHaus\thome\t-2.3\nrot\tred\t-0.1\nHaus\thouse\t-0.4\n")
    assert load_translations(tmp_path / "fa", 2) == {"Haus": ["house", "home"], "rot": ["red"]}
    (tmp_path / "pairs").write_text("Haus house\nHaus home\nHaus hut\n")
    assert load_translations(tmp_path / "pairs", 2) == {"Haus": ["house", "home"]}  # file order among equals


def test_errors_name_file_and_line(tmp_path):
    (tmp_path / "bad").write_text("a b 0.1\na b c\n")
    with pytest.raises(NmtkitError, match=r"bad:2: 'c' is not a number"):
        load_lexicon(tmp_path / "bad")
    (tmp_path / "bad").write_text("a b 0.1 x y\n")
    with pytest.raises(NmtkitError, match=r"bad:1: expected 'source target \[score\]'"):
        load_lexicon(tmp_path / "bad")
    with pytest.raises(NmtkitError, match="no such file"):
        load_lexicon(tmp_path / "missing")
