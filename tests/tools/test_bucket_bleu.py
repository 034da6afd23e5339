"""bucket-bleu: bucket boundaries, per-bucket BLEU equal to sacrebleu on the subset, gains."""
import pytest
from sacrebleu.metrics import BLEU

from nmtkit.errors import NmtkitError
from nmtkit.tools.bucket_bleu import MIN_RESAMPLED, bucket_bleu, bucket_labels, bucket_of, parse_buckets, source_length


def test_bucket_assignment_at_the_boundaries():
    bounds = [10, 20]
    assert [bucket_of(n, bounds) for n in (0, 1, 10, 11, 20, 21, 500)] == [0, 0, 0, 1, 1, 2, 2]
    assert bucket_labels(bounds) == ["1-10", "11-20", ">20"]


def test_parse_buckets_rejects_what_is_not_increasing_positive_numbers():
    assert parse_buckets("5,10,40") == [5, 10, 40]
    for bad in ("", "10,5", "0,10", "10,10", "a,b", "10,,20"):
        with pytest.raises(NmtkitError, match="--buckets"):
            parse_buckets(bad)


def test_length_in_words_or_tokens():
    assert source_length("Hello, world!", None) == 2
    assert source_length("Hello, world!", "13a") == 4
    assert source_length("这是测试", "zh") == 4


def test_bucket_bleu_equals_sacrebleu_on_each_subset_and_gains_are_differences():
    sources = ["a b", "a b c d e", "a", "a b c d e f g h", "x y z w v u"]
    refs = ["the cat sat on the mat", "a dog ran in the park today", "hello there friend",
            "it rains in spain on the plain", "one two three four five six"]
    base = ["the cat sat on a mat", "a dog ran in a park", "hello friend", "it rains in spain", "one two three"]
    other = ["the cat sat on the mat", "a dog ran", "hello there friend", "it rains in spain on the plain", "one"]
    result = bucket_bleu(sources, [refs], {"base": base, "other": other}, [2, 5, 6])
    assert [b.label for b in result] == ["1-2", "3-5", "6", ">6", "all"]
    assert [b.count for b in result] == [2, 1, 1, 1, 5]
    groups = [[0, 2], [1], [4], [3], [0, 1, 2, 3, 4]]
    for bucket, rows in zip(result, groups):
        for name, hyps in (("base", base), ("other", other)):
            expected = BLEU().corpus_score([hyps[i] for i in rows], [[refs[i] for i in rows]]).score
            assert bucket.bleu[name] == pytest.approx(expected)
            assert bucket.length[name] == pytest.approx(sum(len(hyps[i].split()) for i in rows) / len(rows))
        assert bucket.gain["other"] == pytest.approx(bucket.bleu["other"] - bucket.bleu["base"])
        assert bucket.gain["base"] == 0


def test_an_empty_bucket_is_reported_empty():
    result = bucket_bleu(["a", "b"], [["x", "y"]], {"s": ["x", "y"]}, [1, 5])
    assert result[1].count == 0 and result[1].bleu == {"s": None} and result[1].gain == {"s": None}
    assert result[1].as_dict()["bleu"] == {"s": None}


def test_intervals_are_given_to_buckets_of_at_least_min_resampled_sentences():
    """A bucket of exactly MIN_RESAMPLED sentences gets its intervals and p-value; one sentence fewer gets none."""
    n = MIN_RESAMPLED
    sources = ["a"] * (n - 1) + ["a b c"] * n  # buckets 1-2: n - 1 sentences, 3-5: n
    refs = [f"the cat number {i} sat on the mat" for i in range(2 * n - 1)]
    base = [f"the cat number {i} sat on a mat" for i in range(2 * n - 1)]
    other = [f"the cat number {i} sat" for i in range(2 * n - 1)]
    small, exact, _, everything = bucket_bleu(sources, [refs], {"base": base, "other": other}, [2, 5], samples=50)
    assert (small.count, exact.count, everything.count) == (n - 1, n, 2 * n - 1)
    assert small.bleu_ci == {"base": None, "other": None} and small.gain_p["other"] is None
    for bucket in (exact, everything):
        assert all(bucket.bleu_ci[name] is not None for name in ("base", "other"))
        assert bucket.gain_ci["other"] is not None and bucket.gain_p["other"] is not None
