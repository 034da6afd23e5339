"""Statistical significance of metric differences between systems, on sacrebleu's sufficient statistics.

A system may be one output file or several (one per training seed). For one file each, the tests are sacrebleu's
(``sacrebleu.significance``), with the same random draws for the same seed, so their p-values are sacrebleu's but
for ties (see :func:`p_value`):

- **bootstrap confidence interval** of a file's score (Koehn 2004): the score of ``n`` test sets resampled with
  replacement; the interval is the mean ± half the width of the central 95% of them.
- **paired bootstrap resampling** (Koehn 2004): the same resampled test sets scored for both systems; the p-value
  is the share of resamples whose |difference|, centred on its mean, exceeds the observed |difference|.
- **paired approximate randomisation** (Riezler and Maxwell 2005; Clark et al. 2011): each sentence's pair of
  outputs swapped between the systems with probability 1/2 in each trial; the p-value is the share of trials whose
  |difference| exceeds the observed one (with the +1 correction).

For several files (seeds) the statistic is the difference of the systems' **mean scores over their files**: a
resampled test set (or a trial's swaps) applies to every file alike, so the test asks whether the seed means
differ beyond what the test set's sampling explains, not whether other seeds would give other means (their
standard deviation shows that). Approximate randomisation of seed means pairs file k of one system with file k of
the other (in the order given), so it needs as many files on both sides. Each pair of files is tested too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

SEED = 12345  #: sacrebleu's default (its SACREBLEU_SEED)
LOWER_IS_BETTER = ("ter",)  #: metrics whose improvements are negative differences


def sufficient_statistics(metric, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """The per-sentence sufficient statistics ``[sentences, k]`` of a sacrebleu ``metric`` for one output file."""
    return np.array(metric._extract_corpus_statistics(list(hypotheses), [list(r) for r in references]),
                    dtype="float32")


def corpus_value(metric, stats: np.ndarray) -> float:
    """The corpus score of a file's statistics (rows: sentences), summed exactly."""
    return float(metric._compute_score_from_stats(stats.sum(0, dtype=np.float64)).score)


CHUNK = 100  #: resampled test sets (or trials) held in memory at once: [CHUNK, sentences, statistics]


def resampled_values(metric, stats: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The corpus score of each resampled test set (``rows [n, sentences]``: sentence indices)."""
    return np.array([metric._compute_score_from_stats(s.sum(0)).score
                     for start in range(0, len(rows), CHUNK) for s in stats[rows[start:start + CHUNK]]])


def central_interval(values: np.ndarray) -> tuple[float, float]:
    """The mean of ``values`` and half the width of their central 95% (sacrebleu's ``estimate_ci``)."""
    values = np.sort(values)
    low = len(values) // 40
    return float(values.mean()), float(0.5 * (values[len(values) - low - 1] - values[low]))


TIE = 1e-4  #: score points within which a resampled statistic ties with the observed one (float32 sums round)


def p_value(samples: np.ndarray, observed: float) -> float:
    """The share of ``samples`` at least as extreme as ``observed`` (within :data:`TIE`), with the +1 correction
    (Noreen 1989; MultEval). sacrebleu counts only those strictly above, the same but for ties: a system against
    itself (every sample 0, observed 0) then has p = 1 here, where sacrebleu gives 1/(n + 1), "significant"."""
    return (int(np.sum(samples >= observed - TIE)) + 1) / (len(samples) + 1)


@dataclass
class Interval:
    """A file's score and its bootstrap estimate: ``mean`` ± ``ci`` covers 95% of the resampled scores."""

    score: float
    mean: float
    ci: float


class Resamples:
    """The resampled test sets and the trials' swaps of one seed over ``sentences`` sentences, and the scores of each
    file on them (each pair of files, for the swaps), computed once and reused by every interval and test that needs
    them (:func:`compare_systems` tests each file several times). The draws are those of a fresh generator of
    ``seed`` for each, as sacrebleu's."""

    def __init__(self, metric, sentences: int, samples: int = 1000, trials: int = 10000, seed: Optional[int] = SEED):
        self.metric, self.sentences, self.samples, self.trials, self.seed = metric, sentences, samples, trials, seed
        self._rows: Optional[np.ndarray] = None
        self._swap: Optional[np.ndarray] = None
        self._scores: dict[tuple[int, ...], tuple[list[np.ndarray], np.ndarray]] = {}  # by the files' ids (kept)

    def _remembered(self, files: list[np.ndarray], compute) -> np.ndarray:
        key = tuple(id(f) for f in files)
        if key not in self._scores:
            self._scores[key] = (files, compute())
        return self._scores[key][1]

    def bootstrap(self, stats: np.ndarray) -> np.ndarray:
        """The file's corpus score on each resampled test set ``[samples]``."""
        if self._rows is None:
            n = self.sentences
            self._rows = np.random.default_rng(self.seed).choice(n, size=(self.samples, n), replace=True)
        rows = self._rows
        return self._remembered([stats], lambda: resampled_values(self.metric, stats, rows))

    def swapped(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The corpus score of file ``a`` with each trial's swapped sentences taken from file ``b`` ``[trials]``."""
        if self._swap is None:
            self._swap = np.random.default_rng(self.seed).integers(2, size=(self.trials, self.sentences), dtype=bool)
        swap, keep, score = self._swap, ~self._swap, self.metric._compute_score_from_stats
        return self._remembered([a, b], lambda: np.array([
            score(x).score for start in range(0, self.trials, CHUNK)
            for x in swap[start:start + CHUNK] @ b + keep[start:start + CHUNK] @ a]))


def confidence_interval(metric, stats: np.ndarray, samples: int = 1000, seed: Optional[int] = SEED,
                        resamples: Optional[Resamples] = None) -> Interval:
    """The bootstrap confidence interval of one file's score (``stats`` its :func:`sufficient_statistics`);
    ``resamples`` (else new ones of ``samples`` and ``seed``) holds the resampled test sets."""
    resamples = resamples or Resamples(metric, len(stats), samples, seed=seed)
    return Interval(corpus_value(metric, stats), *central_interval(resamples.bootstrap(stats)))


@dataclass
class Difference:
    """A system against the baseline: the observed difference of mean scores, the 95% interval of the paired
    bootstrap's differences, and the p-values of paired bootstrap resampling and approximate randomisation (None
    where it does not apply)."""

    delta: float
    delta_ci: float
    p_bootstrap: float
    p_randomisation: Optional[float] = None

    def significant(self, level: float = 0.05) -> bool:
        """Whether both tests that apply reject equality at ``level``."""
        return self.p_bootstrap < level and (self.p_randomisation is None or self.p_randomisation < level)


def paired_bootstrap(metric, baseline: Sequence[np.ndarray], system: Sequence[np.ndarray], samples: int = 1000,
                     seed: Optional[int] = SEED, resamples: Optional[Resamples] = None) -> tuple[float, float, float]:
    """Paired bootstrap test of the difference of mean scores (files: statistics of one system's outputs): the
    observed difference (system minus baseline), the half-width of the 95% interval of the resampled differences,
    and the p-value."""
    resamples = resamples or Resamples(metric, len(baseline[0]), samples, seed=seed)
    base = np.mean([resamples.bootstrap(s) for s in baseline], axis=0)
    sys_ = np.mean([resamples.bootstrap(s) for s in system], axis=0)
    observed = np.mean([corpus_value(metric, s) for s in system]) - np.mean([corpus_value(metric, s) for s in baseline])
    spread = np.abs(sys_ - base)
    return float(observed), central_interval(sys_ - base)[1], p_value(spread - spread.mean(), abs(observed))


def approximate_randomisation(metric, baseline: Sequence[np.ndarray], system: Sequence[np.ndarray],
                              trials: int = 10000, seed: Optional[int] = SEED,
                              resamples: Optional[Resamples] = None) -> float:
    """Paired approximate randomisation test of the difference of mean scores; file k of the baseline is paired with
    file k of the system (as many on both sides). The p-value."""
    if len(baseline) != len(system):
        raise ValueError("approximate randomisation pairs the files: give both systems as many")
    resamples = resamples or Resamples(metric, len(baseline[0]), trials=trials, seed=seed)

    def mean_scores(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> np.ndarray:
        return np.mean([resamples.swapped(sa, sb) for sa, sb in zip(a, b)], axis=0)

    observed = abs(np.mean([corpus_value(metric, s) for s in system]) -
                   np.mean([corpus_value(metric, s) for s in baseline]))
    return p_value(np.abs(mean_scores(baseline, system) - mean_scores(system, baseline)), float(observed))


@dataclass
class SystemScores:
    """One system's files scored: each file's :class:`Interval`, and their mean and sample standard deviation
    (over seeds, n - 1 in the denominator; None for one file)."""

    name: str
    files: list[str]
    runs: list[Interval]

    @property
    def mean(self) -> float:
        return float(np.mean([r.score for r in self.runs]))

    @property
    def sd(self) -> Optional[float]:
        return float(np.std([r.score for r in self.runs], ddof=1)) if len(self.runs) > 1 else None


@dataclass
class MetricComparison:
    """Every system under one metric: their scores, each against the first (the difference of seed means) and
    each pair of their files (baseline file i, system file j)."""

    metric: str
    signature: str
    systems: list[SystemScores]
    against_first: dict[str, Difference] = field(default_factory=dict)
    pairs: dict[str, dict[tuple[int, int], Difference]] = field(default_factory=dict)


def compare_systems(metric_name: str, metric, references: Sequence[Sequence[str]],
                    systems: dict[str, list[tuple[str, Sequence[str]]]], samples: int = 1000, trials: int = 10000,
                    seed: Optional[int] = SEED) -> MetricComparison:
    """Score ``systems`` (name -> its files, each (path, lines); the first is the baseline) with ``metric``: each
    file's bootstrap interval, and each later system against the first by both tests, on the mean over files and
    file by file."""
    stats = {name: [sufficient_statistics(metric, lines, references) for _, lines in files]
             for name, files in systems.items()}
    resamples = Resamples(metric, len(next(iter(stats.values()))[0]), samples, trials, seed)
    signature = metric.get_signature()
    signature.update("seed", str(seed).lower())
    signature.update("bs", samples)
    signature.update("ar", trials)
    result = MetricComparison(metric_name, str(signature), [
        SystemScores(name, [path for path, _ in files], [confidence_interval(metric, s, resamples=resamples)
                                                          for s in stats[name]])
        for name, files in systems.items()])
    names = list(systems)
    base = stats[names[0]]

    def difference(baseline: list[np.ndarray], system: list[np.ndarray]) -> Difference:
        randomised = approximate_randomisation(metric, baseline, system, resamples=resamples) \
            if len(baseline) == len(system) else None
        return Difference(*paired_bootstrap(metric, baseline, system, resamples=resamples), randomised)

    for name in names[1:]:
        own = stats[name]
        result.against_first[name] = difference(base, own)
        if len(base) > 1 or len(own) > 1:
            result.pairs[name] = {(i, j): difference([b], [s]) for i, b in enumerate(base) for j, s in enumerate(own)}
    return result
