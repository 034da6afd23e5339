from nmtkit.train.optim import Schedule


def test_learning_rate_halves_when_bleu_drops_and_patience_stops():
    s = Schedule(lr=1.0, metric="bleu", decay=0.5, patience=2)
    assert s.update(10.0) == (True, False) and s.lr == 1.0
    assert s.update(12.0) == (True, False) and s.lr == 1.0
    assert s.update(11.0) == (False, False) and s.lr == 0.5  # drop: halve
    assert s.update(11.5) == (False, True) and s.lr == 0.5  # rose again: no halving, but 2 without a best


def test_perplexity_is_lower_is_better():
    s = Schedule(lr=1.0, metric="ppl", decay=0.5, patience=0)
    assert s.update(10.0)[0] and s.update(9.0)[0]
    assert s.update(9.5) == (False, False) and s.lr == 0.5
