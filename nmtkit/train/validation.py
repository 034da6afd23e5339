"""Validation during training: perplexity and the BLEU/chrF of translating the validation set,
and early stopping on the chosen metric."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from nmtkit.data.batching import example_lengths, examples_batch
from nmtkit.data.shards import Corpus, Shard
from nmtkit.data.streams import TARGET
from nmtkit.data.text import read_lines
from nmtkit.metrics.perplexity import corpus_nll, perplexity
from nmtkit.metrics.text import VALIDATION_METRICS, corpus_score
from nmtkit.models.seq2seq import Seq2Seq
from nmtkit.search.translator import SearchOptions, search_sorted
from nmtkit.train.schedules import is_better


@dataclass
class EarlyStopping:
    """The best validation value so far, and stopping after ``patience`` validations without a new best (0: never)."""

    metric: str = "bleu"
    patience: int = 10
    best: Optional[float] = None
    bad: int = 0
    best_step: Optional[int] = None  #: the update of the best validation (None: not known, as in older checkpoints)
    last_step: Optional[int] = None  #: the update of the last validation (None: none yet, or not known)

    def update(self, value: float, step: Optional[int] = None) -> tuple[bool, bool]:
        """Record a validation result (of update ``step``); return (is_new_best, should_stop)."""
        self.last_step = step
        improved = is_better(self.metric, value, self.best)
        if improved:
            self.best, self.bad, self.best_step = value, 0, step
        else:
            self.bad += 1
        return improved, self.stopped

    @property
    def stopped(self) -> bool:
        """Whether ``patience`` validations in a row brought no new best."""
        return self.patience > 0 and self.bad >= self.patience

    def state(self) -> dict:
        return {"best": self.best, "bad": self.bad, "best_step": self.best_step, "last_step": self.last_step}

    def load_state(self, state: dict) -> None:
        self.best, self.bad, self.best_step = state["best"], state["bad"], state.get("best_step")
        self.last_step = state.get("last_step")


#: the most tokens of a side of a validation pair that validation reads (as Marian's --valid-max-length): a longer
#: pair is left out of the perplexity, and its inputs cut to this many tokens to be translated (whole, the memory of
#: its attention would grow with the square of its length: a pair of 30,000 words asked for 40 GB)
VALID_MAX_LEN = 1000


def too_long_to_validate(corpus: Corpus) -> int:
    """How many validation pairs have a side of more than :data:`VALID_MAX_LEN` tokens."""
    if max(corpus.longest("valid").values(), default=0) <= VALID_MAX_LEN:
        return 0
    return sum(int((example_lengths(Shard(p)) - 1 > VALID_MAX_LEN).sum()) for p in corpus.shard_paths("valid"))


def validate(model: Seq2Seq, corpus: Corpus, config: dict, device: torch.device) -> dict:
    """Perplexity of the validation set and BLEU/chrF/chrF++ of the translation of (up to ``valid_max_sentences`` of)
    it, within :data:`VALID_MAX_LEN`."""
    shards = [Shard(p) for p in corpus.shard_paths("valid")]
    examples = [(sh, i) for sh in shards for i in range(len(sh))]
    lengths = {id(sh): example_lengths(sh) - 1 for sh in shards}
    scored = [(sh, i) for sh, i in examples if lengths[id(sh)][i] <= VALID_MAX_LEN]
    nll, ntok = corpus_nll(model, (examples_batch(scored[k:k + 64]) for k in range(0, len(scored), 64)), device)
    result = {"ppl": round(perplexity(nll, ntok), 4)}
    n = config["valid_max_sentences"] or len(examples)
    tgt_vocab = corpus.tgt_vocab
    refs = corpus.references("valid", n) or [[tgt_vocab.decode(sh.get(TARGET, i)) for sh, i in examples[:n]]]
    opts = SearchOptions(beam_size=config["valid_beam"], batch_size=config["valid_batch_size"],
                         max_len_a=config["max_len_a"], max_len_b=config["max_len_b"])
    held_out = examples[:n]
    by_shard = {id(sh): example_lengths(sh, inputs_only=True) for sh, _ in held_out}
    hyps = search_sorted(model, [min(int(by_shard[id(sh)][i]), VALID_MAX_LEN + 1) for sh, i in held_out],
                         lambda idx: examples_batch([held_out[k] for k in idx], target=False, cut=VALID_MAX_LEN),
                         opts, device)
    texts = as_text(corpus, [tgt_vocab.decode(h[0].tokens) for h in hyps])
    for metric in VALIDATION_METRICS:  # (BLEU with the run's tokenizer; chrF has its own, on characters)
        tokenize = config["valid_tokenize"] if metric == "bleu" else None
        result[metric] = round(corpus_score(metric, texts, refs, tokenize=tokenize).score, 3)
    return result


def as_text(corpus: Corpus, hyps: list[str]) -> list[str]:
    """Validation hypotheses as text, in the corpus' output form (with the raw validation inputs it reads)."""
    form, raw = corpus.output_form, corpus.manifest["splits"]["valid"]["inputs"]
    return form.texts(hyps, {stream: read_lines(corpus.folder / raw[stream]) for stream in form.reads})
