"""Corpus-level BLEU, chrF and TER through sacrebleu, with its signature."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

METRICS = ("bleu", "chrf", "ter")


@dataclass
class Score:
    metric: str
    score: float
    text: str  # sacrebleu's formatted result, e.g. "BLEU = 18.61 52.1/24.3/..."
    signature: str


def corpus_score(metric: str, hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                 tokenize: str | None = None, lowercase: bool = False) -> Score:
    """Score ``hypotheses`` against one or more reference streams (each as long as the hypotheses)."""
    from sacrebleu.metrics import BLEU, CHRF, TER

    if metric == "bleu":
        m = BLEU(tokenize=tokenize, lowercase=lowercase)
    elif metric == "chrf":
        m = CHRF(lowercase=lowercase)
    elif metric == "ter":
        m = TER(case_sensitive=not lowercase)
    else:
        raise ValueError(f"unknown metric {metric!r}")
    result = m.corpus_score(list(hypotheses), [list(r) for r in references])
    return Score(metric, float(result.score), str(result), str(m.get_signature()))
