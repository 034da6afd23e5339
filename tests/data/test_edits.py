"""Edit operations for automatic post-editing: round trip, minimality, and the repair of ill-formed sequences."""
import itertools
import random

import pytest

from nmtkit.data.edits import DELETE, KEEP, apply_edits, edit_operations

PAIRS = [
    ("the cat sat", "the cat sat"),  # identical
    ("", "a new sentence"),  # empty MT
    ("nothing of this stays", ""),  # empty post-edit
    ("a c", "a b c d"),  # pure insertion
    ("a b c d", "b d"),  # pure deletion
    ("he go home", "he goes home"),  # substitution
    ("b c a", "a b c"),  # reordering
    ("the the cat the", "the cat the the"),  # repeated words
    ("  spaced   out\ttext ", "spaced text  out"),  # any whitespace separates words
]


def _normalised(text):
    return " ".join(text.split())


def _brute_force_lcs(a, b):
    """The longest common subsequence's length, by trying every subsequence of ``a`` from the longest."""
    def is_subsequence(sub):
        rest = iter(b)
        return all(word in rest for word in sub)

    for k in range(len(a), -1, -1):
        if any(is_subsequence(sub) for sub in itertools.combinations(a, k)):
            return k


def _random_pair(rng, max_words):
    words = "a b c d e".split()
    return tuple(" ".join(rng.choice(words) for _ in range(rng.randint(0, max_words))) for _ in range(2))


@pytest.mark.parametrize("mt,pe", PAIRS)
def test_applying_the_operations_gives_the_post_edit(mt, pe):
    assert apply_edits(mt, edit_operations(mt, pe)) == _normalised(pe)


def test_the_operations_of_hand_made_pairs():
    assert edit_operations("the cat sat", "the cat sat") == f"{KEEP} {KEEP} {KEEP}"
    assert edit_operations("", "a b") == "a b"
    assert edit_operations("a b", "") == f"{DELETE} {DELETE}"
    assert edit_operations("a c", "a b c d") == f"{KEEP} b {KEEP} d"
    assert edit_operations("he go home", "he goes home") == f"{KEEP} {DELETE} goes {KEEP}"  # deletion first
    assert edit_operations("x", "y") == f"{DELETE} y"
    assert edit_operations("", "") == ""


def test_random_pairs_round_trip():
    rng = random.Random(7)
    for _ in range(400):
        mt, pe = _random_pair(rng, 12)
        assert apply_edits(mt, edit_operations(mt, pe)) == pe, (mt, pe)


def test_the_operations_are_minimal():
    """As many keeps as the longest common subsequence is long (brute force), and every other word once."""
    rng = random.Random(11)
    for _ in range(300):
        mt, pe = _random_pair(rng, 7)
        ops = edit_operations(mt, pe).split()
        lcs = _brute_force_lcs(mt.split(), pe.split())
        assert ops.count(KEEP) == lcs, (mt, pe, ops)
        assert ops.count(KEEP) + ops.count(DELETE) == len(mt.split())
        assert len(ops) == len(mt.split()) + len(pe.split()) - lcs


def test_a_post_edit_word_named_like_an_operation_is_refused():
    with pytest.raises(ValueError, match="'<keep>'"):
        edit_operations("a b", f"a {KEEP} b")
    with pytest.raises(ValueError, match="'<delete>'"):
        edit_operations("a", DELETE)


def test_ill_formed_operations_are_repaired():
    """Keeps and deletes past the MT words are ignored; MT words the operations never reach are kept."""
    assert apply_edits("a b", f"{KEEP} {DELETE} {KEEP} {DELETE} x {KEEP}") == "a x"  # too long
    assert apply_edits("a b c", f"{DELETE} y") == "y b c"  # too short
    assert apply_edits("a b c", "") == "a b c"  # empty
    assert apply_edits("", f"{KEEP} z {DELETE}") == "z"
