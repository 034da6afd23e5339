import pytest

from nmtkit.data.numbers import english, german, write_demo_corpus


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
