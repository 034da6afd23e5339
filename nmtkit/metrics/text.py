"""Corpus-level BLEU (BLEU-1..4, with or without the brevity penalty), chrF, chrF++ and TER through sacrebleu, with
its signature (and, if asked, a bootstrap confidence interval); CIDEr-D (:mod:`nmtkit.metrics.cider`) for
captions."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional, Sequence

from nmtkit.errors import NmtkitError

METRICS = ("bleu", "chrf", "chrf++", "ter", "cider")
SACREBLEU_METRICS = ("bleu", "chrf", "chrf++", "ter")
VALIDATION_METRICS = ("bleu", "chrf", "chrf++")  #: what validation scores its outputs with (beside perplexity)
#: sacrebleu's BLEU tokenizers that need nothing installed nor downloaded: those validation may use
VALID_TOKENIZERS = ("13a", "intl", "zh", "char", "none")
LABELS = {"ppl": "ppl", "bleu": "BLEU", "chrf": "chrF", "chrf++": "chrF++"}  #: as the training log names them


def check_tokenizer(name: str, option: str = "--tokenize") -> None:
    """That sacrebleu knows the tokenizer ``name`` (else a usage error naming ``option`` and listing those it knows)
    and can load it (its extra packages; the SentencePiece model it downloads once)."""
    from sacrebleu.metrics import BLEU

    if name not in BLEU.TOKENIZERS:
        raise NmtkitError(f"{option}: unknown tokenizer {name!r}; known: {', '.join(sorted(BLEU.TOKENIZERS))}",
                          exit_code=2)
    sacrebleu_log = logging.getLogger("sacrebleu")
    level = sacrebleu_log.level
    sacrebleu_log.setLevel(logging.ERROR)  # (its notice that spm is now flores101 came before our one line)
    try:
        BLEU(tokenize=name)
    except (ImportError, OSError, RuntimeError) as e:
        raise NmtkitError(f"{option} {name}: sacrebleu cannot load this tokenizer: {' '.join(str(e).split())}") \
            from None
    finally:
        sacrebleu_log.setLevel(level)


@dataclass
class Score:
    metric: str
    score: float
    text: str  # sacrebleu's formatted result, e.g. "BLEU = 18.61 52.1/24.3/..."
    signature: str
    mean: Optional[float] = None  # with a bootstrap: the mean of the resampled scores
    ci: Optional[float] = None  # and half the width of their central 95%


def sacrebleu_metric(metric: str, tokenize: Optional[str] = None, lowercase: bool = False, max_ngram: int = 4):
    """The sacrebleu metric object of one of :data:`SACREBLEU_METRICS` (chrF++: chrF with word bigrams, Popović
    2017)."""
    from sacrebleu.metrics import BLEU, CHRF, TER

    if metric == "bleu":
        return BLEU(tokenize=tokenize, lowercase=lowercase, max_ngram_order=max_ngram)
    if metric in ("chrf", "chrf++"):
        return CHRF(lowercase=lowercase, word_order=2 if metric == "chrf++" else 0)
    if metric == "ter":
        return TER(case_sensitive=not lowercase)
    raise ValueError(f"unknown metric {metric!r}")


def corpus_score(metric: str, hypotheses: Sequence[str], references: Sequence[Sequence[Optional[str]]],
                 tokenize: str | None = None, lowercase: bool = False, max_ngram: int = 4,
                 brevity_penalty: bool = True, n_bootstrap: int = 1) -> Score:
    """Score ``hypotheses`` against one or more reference streams (each as long as the hypotheses; None where a
    hypothesis has fewer references). BLEU takes n-grams up to ``max_ngram`` (BLEU-1..4) and, without
    ``brevity_penalty``, is the geometric mean of the n-gram precisions alone, as captioning papers report it.
    ``n_bootstrap`` > 1 adds sacrebleu's 95% bootstrap confidence interval to the text and the signature."""
    if metric == "cider":
        from nmtkit.metrics.cider import cider_d

        fold = (lambda t: t.lower()) if lowercase else (lambda t: t)
        sets = [[fold(r) for r in rs if r is not None] for rs in zip(*references)]
        value, _ = cider_d([fold(h) for h in hypotheses], sets)
        return Score(metric, 100 * value, f"CIDEr-D = {100 * value:.2f} (x100; {len(sets)} images, "
                     f"{sum(map(len, sets))} references)", "nmtkit CIDEr-D|n:4|sigma:6|tok:space"
                     + ("|lc" if lowercase else ""))
    m = sacrebleu_metric(metric, tokenize, lowercase, max_ngram)
    result = m.corpus_score(list(hypotheses), [list(r) for r in references], n_bootstrap=n_bootstrap)
    signature = str(m.get_signature()) + (f"|ngram:{max_ngram}" if metric == "bleu" and max_ngram != 4 else "")
    if metric == "bleu" and not brevity_penalty:  # exp(Σ_n log p_n / N): sacrebleu's BLEU over its BP
        value = result.score / result.bp if result.bp > 0 else 0.0
        precisions = "/".join(f"{p:.1f}" for p in result.precisions)
        return Score(metric, value, f"BLEU-{max_ngram} without brevity penalty = {value:.2f} {precisions} "
                     f"(BP would be {result.bp:.3f})", signature + "|bp:off")
    # (sacrebleu's own line, but BLEU-N named, and the bootstrap's mean given even where it is 0)
    name = f"BLEU-{max_ngram}" if metric == "bleu" and max_ngram != 4 else result.name
    mean = f" (μ = {result._mean:.2f} ± {result._ci:.2f})" if n_bootstrap > 1 else ""
    text = f"{name} = {result.score:.2f}{mean}" + (f" {result._verbose}" if result._verbose else "")
    bootstrap = (float(result._mean), float(result._ci)) if n_bootstrap > 1 else (None, None)
    return Score(metric, float(result.score), text, signature, *bootstrap)
