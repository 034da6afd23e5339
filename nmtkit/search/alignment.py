"""Word alignments from attention (``translate --alignments``): each output token is linked to the input token it
attends to most (the input's ``</s>`` never), and the links are lifted to words, subwords joined as the
detokenised text joins them, in the Moses format ``i-j`` (source word i, target word j, from 0), each pair once.

The attention of an RNN trained for translation is a soft alignment (global-local-attention.md calls its weights
the alignment vector a_t, Eq. 7); a Transformer's averaged last-layer heads are a looser one, and
``--attention-layer``/``--attention-head`` choose which of its weights are read.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from nmtkit.data.vocab import Vocab
from nmtkit.errors import NmtkitError
from nmtkit.search.hypothesis import Hypothesis
from nmtkit.search.sources import Inputs


def attention_links(weights: np.ndarray, src_words: Sequence[int], tgt_words: Sequence[int]) -> list[tuple[int, int]]:
    """The word links of attention ``weights [target tokens (+ </s>), source positions]``: each target token's most
    attended source token among the first ``len(src_words)`` (the real tokens), as ``(source word, target word)``
    pairs by :meth:`~nmtkit.data.vocab.Vocab.word_index`, each once, sorted; a target token of no word (-1) has
    none."""
    if not len(src_words) or not len(tgt_words):
        return []
    best = weights[:len(tgt_words), :len(src_words)].argmax(1)
    return sorted({(src_words[j], tgt_words[t]) for t, j in enumerate(best) if tgt_words[t] >= 0})


def moses(links: Sequence[tuple[int, int]]) -> str:
    """Links as a Moses alignment line: ``0-0 1-2 2-1``."""
    return " ".join(f"{i}-{j}" for i, j in links)


class Aligner:
    """The alignment of an output with the model's text input ``stream`` (its first), from the output's ``source``
    attention; the vocabularies say which tokens are words."""

    def __init__(self, stream: str, src_vocab: Vocab, tgt_vocab: Vocab):
        self.stream, self.src_vocab, self.tgt_vocab = stream, src_vocab, tgt_vocab

    def __call__(self, inputs: Inputs, hypothesis: Hypothesis) -> str:
        src = list(inputs[self.stream])
        return moses(attention_links(source_attention(hypothesis, "--alignments"), self.src_vocab.input_word_index(src),
                                     self.tgt_vocab.word_index(hypothesis.tokens)))


def source_attention(hypothesis: Hypothesis, option: str) -> np.ndarray:
    """The attention of an output over its first input, which ``option`` reads; a one-line error for a model whose
    decoding gives none (an architecture without attention may return none: docs/adding-a-model.md)."""
    if "source" not in hypothesis.attention:
        raise NmtkitError(f"{option}: this model gives no 'source' attention (over its first input) to read the "
                          "source words from", exit_code=2)
    return hypothesis.attention["source"]
