"""Early stopping, and validation of a model on a corpus."""
from nmtkit.train.validation import EarlyStopping


def test_early_stopping_counts_validations_without_a_new_best():
    s = EarlyStopping("bleu", patience=2)
    assert [s.update(v) for v in (10.0, 12.0, 11.0, 12.0, 13.0)] == [
        (True, False), (True, False), (False, False), (False, True), (True, False)]
    never = EarlyStopping("ppl", patience=0)
    assert [never.update(v) for v in (5.0, 6.0, 6.0, 7.0)] == [(True, False)] + [(False, False)] * 3
