import pytest

from nmtkit.data.numbers import english, german, write_demo_corpus
from nmtkit.errors import NmtkitError


@pytest.mark.parametrize("n,en,de", [
    (0, "zero", "null"), (1, "one", "eins"), (21, "twenty-one", "ein und zwanzig"),
    (101, "one hundred one", "ein hundert eins"), (1001, "one thousand one", "ein tausend eins"),
    (342915, "three hundred forty-two thousand nine hundred fifteen",
     "drei hundert zwei und vierzig tausend neun hundert fünfzehn"),
])
def test_numbers_in_words(n, en, de):
    assert english(n) == en and german(n) == de


def test_the_demo_splits_hold_different_numbers(tmp_path):
    folder = write_demo_corpus(tmp_path / "demo", train=3000, valid=300, test=300)
    splits = {name: set((folder / f"{name}.en").read_text().splitlines()) for name in ("train", "valid", "test")}
    assert [len(s) for s in splits.values()] == [3000, 300, 300]  # (no number twice in a split)
    assert not (splits["train"] & splits["valid"] or splits["train"] & splits["test"] or splits["valid"] & splits["test"])
    # log-uniform below a million: 9 has a chance of log10(10/9)/6 > 0.0076 a draw, so all nine digits are among
    # 3,600 draws but for a chance below 1e-11 (and the seed is fixed)
    assert {english(d) for d in range(1, 10)} <= set().union(*splits.values())
    numbers = {english(n): n for n in range(10 ** 6)}
    for name in ("train", "valid", "test"):  # each German line says the number of its English line
        en, de = ((folder / f"{name}.{side}").read_text().splitlines() for side in ("en", "de"))
        assert de == [german(numbers[line]) for line in en]


def test_at_most_max_pairs_together(tmp_path, monkeypatch):
    monkeypatch.setattr("nmtkit.data.numbers.MAX_PAIRS", 10)
    write_demo_corpus(tmp_path / "ten", train=8, valid=1, test=1)
    with pytest.raises(NmtkitError, match="at most 10 pairs together"):
        write_demo_corpus(tmp_path / "eleven", train=9, valid=1, test=1)
