"""Significance tests: for one file per system the intervals and p-values are sacrebleu's own; a system against
itself is not significant, a clearly better one is; several files (seeds) aggregate as the mean of their scores."""
from __future__ import annotations

import random
from dataclasses import astuple

import numpy as np
import pytest
from sacrebleu.significance import PairedTest

from nmtkit.metrics.significance import (
    approximate_randomisation,
    compare_systems,
    confidence_interval,
    paired_bootstrap,
    sufficient_statistics,
)
from nmtkit.metrics.text import sacrebleu_metric

WORDS = "the a cat dog sat ran on under mat house red blue quickly slowly".split()


def corpus(n: int = 120, seed: int = 0) -> list[str]:
    g = random.Random(seed)
    return [" ".join(g.choice(WORDS) for _ in range(g.randrange(4, 12))) for _ in range(n)]


def noisy(reference: list[str], rate: float, seed: int) -> list[str]:
    """The reference with each word replaced by 'x' with probability ``rate``."""
    g = random.Random(seed)
    return [" ".join(w if g.random() > rate else "x" for w in line.split()) for line in reference]


REF = corpus()
BASE, OTHER = noisy(REF, 0.3, 1), noisy(REF, 0.28, 2)  # close: the tests cannot tell them apart for sure


@pytest.mark.parametrize("name", ["bleu", "chrf", "chrf++", "ter"])
def test_intervals_and_p_values_are_sacrebleus_for_one_file_each(name):
    metric = sacrebleu_metric(name)
    _, theirs = PairedTest([("base", BASE), ("other", OTHER)], {name: metric}, [REF], "bs", 300)()
    base, other = (sufficient_statistics(metric, h, [REF]) for h in (BASE, OTHER))
    mine = confidence_interval(metric, other, 300)
    expected = next(v for k, v in theirs.items() if k != "System")[1]
    assert mine.score == pytest.approx(expected.score, abs=1e-6)
    assert (mine.mean, mine.ci) == pytest.approx((expected.mean, expected.ci), abs=1e-6)
    delta, _, p = paired_bootstrap(metric, [base], [other], 300)
    assert p == pytest.approx(expected.p_value) and abs(delta) == pytest.approx(abs(expected.score - theirs[
        next(k for k in theirs if k != "System")][0].score), abs=1e-6)
    _, theirs = PairedTest([("base", BASE), ("other", OTHER)], {name: sacrebleu_metric(name)}, [REF], "ar", 500)()
    ar = next(v for k, v in theirs.items() if k != "System")[1]
    mine = approximate_randomisation(metric, [base], [other], 500)
    assert 0.01 < ar.p_value < 1  # the inputs are not degenerate
    # the same trials; chrF's n-gram counts and TER's edits put many trials' differences exactly on the observed
    # one, which nmtkit counts (ties are as extreme) and sacrebleu counts only where float32 rounding lifts them
    assert mine == pytest.approx(ar.p_value) if name == "bleu" else mine >= ar.p_value


@pytest.mark.parametrize("name", ["bleu", "chrf++", "ter"])
def test_a_system_against_itself_is_not_significant(name):
    """Every resample or trial ties with the observed 0 (float32 sums included: TER's no-swap trial rounds)."""
    metric = sacrebleu_metric(name)
    base = sufficient_statistics(metric, BASE, [REF])
    assert paired_bootstrap(metric, [base], [base.copy()], 200)[2] == 1.0
    assert approximate_randomisation(metric, [base], [base.copy()], 200) == 1.0
    other = sufficient_statistics(metric, OTHER, [REF])  # a trial that swaps nothing ties with the observed
    assert approximate_randomisation(metric, [base], [other], 200) > 1 / 201


def test_a_clearly_better_system_is_significant():
    metric = sacrebleu_metric("bleu")
    base = sufficient_statistics(metric, BASE, [REF])
    better = sufficient_statistics(metric, noisy(REF, 0.05, 3), [REF])
    delta, ci, p = paired_bootstrap(metric, [base], [better], 200)
    assert delta > 10 and 0 < ci < delta and p < 0.01
    assert approximate_randomisation(metric, [base], [better], 200) < 0.01


def test_seeds_aggregate_as_the_mean_of_their_scores():
    metric = sacrebleu_metric("bleu")
    base_runs = [("b1", noisy(REF, 0.3, 11)), ("b2", noisy(REF, 0.3, 12)), ("b3", noisy(REF, 0.3, 13))]
    sys_runs = [("s1", noisy(REF, 0.1, 21)), ("s2", noisy(REF, 0.1, 22)), ("s3", noisy(REF, 0.1, 23))]
    result = compare_systems("bleu", metric, [REF], {"base": base_runs, "tatt": sys_runs}, 100, 100)
    scores = [metric.corpus_score(h, [REF]).score for _, h in sys_runs]
    tatt = result.systems[1]
    assert tatt.files == ["s1", "s2", "s3"] and [r.score for r in tatt.runs] == pytest.approx(scores)
    assert tatt.mean == pytest.approx(np.mean(scores)) and tatt.sd == pytest.approx(np.std(scores, ddof=1))
    base_mean = np.mean([metric.corpus_score(h, [REF]).score for _, h in base_runs])
    diff = result.against_first["tatt"]
    assert diff.delta == pytest.approx(np.mean(scores) - base_mean) and diff.significant()
    assert len(result.pairs["tatt"]) == 9 and all(d.significant() for d in result.pairs["tatt"].values())
    # three copies of each file: the seed means are the files' scores, and so are the tests
    copies = compare_systems("bleu", metric, [REF], {"a": [("a", BASE)] * 3, "b": [("b", OTHER)] * 3}, 100, 100)
    single = compare_systems("bleu", metric, [REF], {"a": [("a", BASE)], "b": [("b", OTHER)]}, 100, 100)
    assert astuple(copies.against_first["b"]) == pytest.approx(astuple(single.against_first["b"]))
    assert copies.systems[1].sd == pytest.approx(0, abs=1e-9) and single.systems[1].sd is None
    assert not single.pairs  # one file each: nothing beyond the test of the means


def test_approximate_randomisation_of_seed_means_needs_as_many_files_on_both_sides():
    metric = sacrebleu_metric("chrf")
    result = compare_systems("chrf", metric, [REF], {"a": [("a1", BASE), ("a2", OTHER)], "b": [("b", OTHER)]}, 50, 50)
    assert result.against_first["b"].p_randomisation is None and len(result.pairs["b"]) == 2
    with pytest.raises(ValueError, match="as many"):
        stats = sufficient_statistics(metric, BASE, [REF])
        approximate_randomisation(metric, [stats, stats], [stats], 10)


def test_compare_scores_each_file_once_on_the_resampled_test_sets(monkeypatch):
    import nmtkit.metrics.significance as significance

    metric = sacrebleu_metric("bleu")
    runs = {"a": [(f"a{k}", noisy(REF, 0.3, k)) for k in range(3)], "b": [(f"b{k}", noisy(REF, 0.1, k)) for k in range(3)]}
    calls = []
    resampled = significance.resampled_values
    monkeypatch.setattr(significance, "resampled_values", lambda *a: calls.append(1) or resampled(*a))
    result = compare_systems("bleu", metric, [REF], runs, 100, 100)
    assert len(calls) == 6  # one per file, not one per interval and test
    stats = [sufficient_statistics(metric, lines, [REF]) for _, lines in runs["a"] + runs["b"]]
    alone = paired_bootstrap(metric, stats[:1], stats[4:5], 100), \
        approximate_randomisation(metric, stats[:1], stats[4:5], 100)  # fresh draws, nothing remembered
    pair = result.pairs["b"][0, 1]
    assert (pair.delta, pair.delta_ci, pair.p_bootstrap, pair.p_randomisation) == pytest.approx((*alone[0], alone[1]))
