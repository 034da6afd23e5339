import pytest

from nmtkit.data.numbers import english, german


@pytest.mark.parametrize("n,en,de", [
    (0, "zero", "null"), (1, "one", "eins"), (21, "twenty-one", "ein und zwanzig"),
    (101, "one hundred one", "ein hundert eins"), (1001, "one thousand one", "ein tausend eins"),
    (342915, "three hundred forty-two thousand nine hundred fifteen",
     "drei hundert zwei und vierzig tausend neun hundert fünfzehn"),
])
def test_numbers_in_words(n, en, de):
    assert english(n) == en and german(n) == de
