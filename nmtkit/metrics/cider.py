"""CIDEr-D (Vedantam, Zitnick and Parikh 2015), the consensus metric of image captioning, computed as the COCO
caption evaluation (``pycocoevalcap``'s ``CiderScorer``) computes it.

For n = 1..4, each sentence is a vector of n-gram tf-idf weights g(w) = tf(w) · (log |I| - log max(1, df(w))),
df counting the images whose references hold w and |I| the number of images. Against each reference r of an
image, the hypothesis scores, per n, the clipped cosine Σ_w min(g_h(w), g_r(w)) g_r(w) / (‖g_h‖ ‖g_r‖) times the
length penalty exp(-(l_h - l_r)² / 2σ²), σ = 6, with lengths counted as the COCO code counts them (bigrams). An
image's CIDEr-D is 10 × the mean over n and over its references; the corpus score is the mean over images.
Sentences are split at spaces: tokenise (and lowercase) hypotheses and references alike first.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

N, SIGMA = 4, 6.0


def _ngrams(sentence: str) -> Counter:
    words = sentence.split()
    return Counter(tuple(words[i:i + k]) for k in range(1, N + 1) for i in range(len(words) - k + 1))


def _vector(counts: Counter, df: Counter, log_images: float) -> tuple[list[dict], list[float], int]:
    """tf-idf weights by n, their norms, and the COCO code's length (the number of bigrams)."""
    vec: list[dict] = [{} for _ in range(N)]
    for gram, tf in counts.items():
        vec[len(gram) - 1][gram] = tf * (log_images - math.log(max(1.0, df[gram])))
    norms = [math.sqrt(sum(v * v for v in by_n.values())) for by_n in vec]
    return vec, norms, sum(counts[g] for g in vec[1])


def cider_d(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[float, list[float]]:
    """Corpus CIDEr-D and each hypothesis' score; ``references[i]`` are hypothesis i's references (at least one)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference sets")
    refs = [[_ngrams(r) for r in rs] for rs in references]
    df: Counter = Counter(gram for rs in refs for gram in set().union(*rs))
    log_images = math.log(float(len(refs))) if refs else 0.0
    scores = []
    for hyp, rs in zip(hypotheses, refs):
        h_vec, h_norm, h_len = _vector(_ngrams(hyp), df, log_images)
        total = 0.0
        for r in rs:
            r_vec, r_norm, r_len = _vector(r, df, log_images)
            penalty = math.exp(-((h_len - r_len) ** 2) / (2 * SIGMA ** 2))
            for n in range(N):
                clipped = sum(min(w, r_vec[n].get(g, 0.0)) * r_vec[n].get(g, 0.0) for g, w in h_vec[n].items())
                if h_norm[n] and r_norm[n]:
                    clipped /= h_norm[n] * r_norm[n]
                total += clipped * penalty
        scores.append(10.0 * total / N / len(rs))
    return (sum(scores) / len(scores) if scores else 0.0), scores
