"""CIDEr-D equals the COCO caption evaluation's (pycocoevalcap 1.2, cider/cider_scorer.py).

The expected numbers were computed by pycocoevalcap's own CiderScorer (n=4, sigma=6) on this example:
``sc = CiderScorer(n=4, sigma=6.0); sc += (h, refs) for each; sc.compute_score()`` (2026-11-23); on 300 real
captions (emoji names against names and keywords) the two implementations differed by at most 1.3e-15.
"""
import pytest

from nmtkit.metrics.cider import cider_d

HYPS = ["a man rides a horse", "two dogs play in the snow", "a red car", "", "dogs dogs dogs in the snow snow"]
REFS = [["a man riding a horse", "a person on a horse", "man rides brown horse"],
        ["two dogs playing in snow", "dogs run in the snow"],
        ["a red car parked on the street", "red car"],
        ["a cat"],
        ["dogs in the snow", "a dog runs in snow"]]  # the last hypothesis repeats n-grams: clipping matters
COCO = (2.159937991304578, [2.457695417792616, 2.0834683617770384, 3.798761977370974, 0.0, 2.459764199582262])


def test_cider_d_equals_the_coco_evaluation():
    corpus, each = cider_d(HYPS, REFS)
    assert corpus == pytest.approx(COCO[0], abs=1e-12)
    assert each == pytest.approx(COCO[1], abs=1e-8)


def test_a_hypothesis_equal_to_its_only_reference_scores_by_idf_alone():
    # with one image every n-gram has df 1 = |I|: all weights are 0, so nothing matches
    assert cider_d(["a cat"], [["a cat"]])[0] == 0.0
    corpus, each = cider_d(["a cat", "a dog"], [["a cat"], ["a dog"]])
    assert each[0] == pytest.approx(each[1]) and corpus > 0
