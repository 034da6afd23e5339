"""nmtkit align's command line: what it says of the pairs it leaves out."""
from tests.conftest import run


def test_pairs_too_long_to_align_are_warned_of_by_line(tmp_path):
    (tmp_path / "a.en").write_text("the house\n" + " ".join(["word"] * 1500) + "\nthe cat\n")
    (tmp_path / "a.de").write_text("das haus\n" + " ".join(["wort"] * 1500) + "\ndie katze\n")
    r = run(["align", "--src", tmp_path / "a.en", "--tgt", tmp_path / "a.de", "-o", tmp_path / "lex.tsv"])
    assert (f"warning: {tmp_path / 'a.en'} + {tmp_path / 'a.de'}: 1 sentence pair(s) too long to align (over 2,000,000 "
            "possible links, two sides of some 1,400 words; line 2) left out of EM") in r.stderr
    assert "2 sentence pairs" in r.stderr and "wort" not in (tmp_path / "lex.tsv").read_text()
