"""BLEU by source-sentence length (target-target-attention.txt Fig. 2, bidirectional-target-attention.txt Fig. 3).

Sentences are grouped by the length of their source; each group gets every system's corpus
BLEU (sacrebleu), computed on that group alone, the systems' average output length, and each
system's gain over the first (the baseline).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from nmtkit.errors import NmtkitError
from nmtkit.metrics.significance import confidence_interval, paired_bootstrap, sufficient_statistics
from nmtkit.metrics.text import corpus_score, sacrebleu_metric

#: the fewest sentences a bucket's intervals are computed for: resampling a handful of sentences gives every resample
#: nearly the same score, so an interval of almost 0 and a "significant" gain
MIN_RESAMPLED = 10


def parse_buckets(text: str) -> list[int]:
    """``"10,20,30"`` -> ``[10, 20, 30]``: strictly increasing positive upper bounds."""
    try:
        bounds = [int(x) for x in text.split(",")]
    except ValueError:
        raise NmtkitError(f"--buckets: expected increasing whole numbers such as 10,20,30, not {text!r}",
                          exit_code=2) from None
    if not bounds or bounds[0] < 1 or any(b >= c for b, c in zip(bounds, bounds[1:])):
        raise NmtkitError(f"--buckets: expected increasing positive numbers such as 10,20,30, not {text!r}",
                          exit_code=2)
    return bounds


def bucket_labels(bounds: Sequence[int]) -> list[str]:
    """``[10, 20]`` -> ``["1-10", "11-20", ">20"]`` (a length-0 source falls in the first bucket)."""
    lows = [1] + [b + 1 for b in bounds[:-1]]
    return [f"{lo}-{hi}" if lo < hi else str(hi) for lo, hi in zip(lows, bounds)] + [f">{bounds[-1]}"]


def bucket_of(length: int, bounds: Sequence[int]) -> int:
    """Index of the bucket holding ``length``: the first bound >= length, or the last bucket."""
    for i, b in enumerate(bounds):
        if length <= b:
            return i
    return len(bounds)


def source_length(line: str, tokenize: Optional[str]) -> int:
    """Words of ``line`` (split on whitespace), or tokens of sacrebleu's tokenizer ``tokenize`` (13a, zh, ...)."""
    if tokenize:
        from sacrebleu.metrics.bleu import BLEU

        line = BLEU(tokenize=tokenize).tokenizer(line)
    return len(line.split())


@dataclass
class Bucket:
    label: str
    count: int
    bleu: dict[str, Optional[float]] = field(default_factory=dict)  # system -> BLEU (None: empty bucket)
    length: dict[str, Optional[float]] = field(default_factory=dict)  # system -> mean output words
    gain: dict[str, Optional[float]] = field(default_factory=dict)  # system -> BLEU minus the first system's
    # with a bootstrap: system -> half-width of the 95% interval of its BLEU, of its gain; the gain's p-value
    bleu_ci: dict[str, Optional[float]] = field(default_factory=dict)
    gain_ci: dict[str, Optional[float]] = field(default_factory=dict)
    gain_p: dict[str, Optional[float]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        extra = {"bleu_ci": self.bleu_ci, "gain_ci": self.gain_ci, "gain_p": self.gain_p} if self.bleu_ci else {}
        return {"bucket": self.label, "count": self.count, "bleu": self.bleu, "length": self.length, "gain": self.gain,
                **extra}


def bucket_bleu(sources: Sequence[str], references: Sequence[Sequence[str]], systems: dict[str, Sequence[str]],
                bounds: Sequence[int], tokenize: Optional[str] = None, bleu_tokenize: Optional[str] = None,
                samples: int = 0) -> list[Bucket]:
    """One :class:`Bucket` per length range, then one for all sentences (label ``all``).

    ``references`` are reference streams (one or more), each as long as ``sources``; ``systems``
    maps a name to its hypotheses, the first being the baseline of the gains. With ``samples``
    bootstrap resamples of each bucket of at least :data:`MIN_RESAMPLED` sentences, every BLEU gets its 95%
    confidence interval and every gain its paired bootstrap interval and p-value
    (:mod:`nmtkit.metrics.significance`).
    """
    lengths = [source_length(s, tokenize) for s in sources]
    groups: list[list[int]] = [[] for _ in range(len(bounds) + 1)]
    for i, n in enumerate(lengths):
        groups[bucket_of(n, bounds)].append(i)
    groups.append(list(range(len(sources))))
    baseline = next(iter(systems))
    metric = sacrebleu_metric("bleu", bleu_tokenize)
    stats = {name: sufficient_statistics(metric, hyps, references) for name, hyps in systems.items()} if samples else {}
    result = []
    for label, rows in zip(bucket_labels(bounds) + ["all"], groups):
        bucket = Bucket(label, len(rows))
        for name, hyps in systems.items():
            if rows:
                refs = [[ref[i] for i in rows] for ref in references]
                bucket.bleu[name] = corpus_score("bleu", [hyps[i] for i in rows], refs, tokenize=bleu_tokenize).score
                bucket.length[name] = sum(len(hyps[i].split()) for i in rows) / len(rows)
            else:
                bucket.bleu[name] = bucket.length[name] = None
            base = bucket.bleu[baseline]
            bucket.gain[name] = None if base is None else bucket.bleu[name] - base
            if samples:  # none for a bucket too small to resample, nor for the baseline against itself
                own, enough = stats[name][rows], len(rows) >= MIN_RESAMPLED
                bucket.bleu_ci[name] = confidence_interval(metric, own, samples).ci if enough else None
                _, bucket.gain_ci[name], bucket.gain_p[name] = \
                    paired_bootstrap(metric, [stats[baseline][rows]], [own], samples) if enough and name != baseline \
                    else (None, None, None)
        result.append(bucket)
    return result


def plot_buckets(buckets: Sequence[Bucket], path, title: str = "BLEU by source sentence length",
                 unit: str = "words") -> None:
    """Grouped bars of each system's BLEU per length bucket, and below them each system's gain over the first; with
    intervals (``bucket_bleu(samples=...)``), error bars of their 95% intervals: a gain whose bar crosses 0 is within
    the test set's sampling noise."""
    import numpy as np

    from nmtkit.tools.figures import pyplot, save_figure, setup_fonts

    rows = [b for b in buckets if b.label != "all"]
    systems = list(rows[0].bleu)
    setup_fonts(systems)
    plt = pyplot()
    others = systems[1:]
    fig, axes = plt.subplots(2 if others else 1, 1, sharex=True, squeeze=False,
                             figsize=(max(6.0, 0.9 * len(rows) * max(1, len(systems)) ** 0.5 + 2), 6 if others else 4),
                             gridspec_kw={"height_ratios": [3, 2] if others else [1]})
    x = np.arange(len(rows))
    width = 0.8 / len(systems)
    top = axes[0, 0]
    interval = lambda values: [np.nan if v is None else v for v in values] if rows[0].bleu_ci else None
    for k, name in enumerate(systems):
        values = [np.nan if b.bleu[name] is None else b.bleu[name] for b in rows]
        top.bar(x + (k - (len(systems) - 1) / 2) * width, values, width, label=name,
                yerr=interval(b.bleu_ci.get(name) for b in rows), capsize=2)
    top.set_ylabel("BLEU")
    top.set_title(title)
    top.legend(loc="best")
    top.grid(axis="y", alpha=0.3)
    bottom = axes[-1, 0]
    if others:
        gw = 0.8 / len(others)
        for k, name in enumerate(others):
            gains = [np.nan if b.gain[name] is None else b.gain[name] for b in rows]
            bottom.bar(x + (k - (len(others) - 1) / 2) * gw, gains, gw, label=f"{name} - {systems[0]}",
                       color=f"C{k + 1}", yerr=interval(b.gain_ci.get(name) for b in rows), capsize=2)
        bottom.axhline(0, color="black", linewidth=0.8)
        if len(others) > 1:
            bottom.legend(loc="best")
        bottom.set_ylabel(f"gain over {systems[0]}")
        bottom.grid(axis="y", alpha=0.3)
    bottom.set_xticks(x)
    bottom.set_xticklabels([f"{b.label}\n({b.count})" for b in rows])
    bottom.set_xlabel(f"source length in {unit} (sentences)")
    fig.tight_layout()
    save_figure(fig, path, "--plot")
