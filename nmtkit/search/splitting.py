"""Long inputs split at sentence ends (``translate --split-long``): a text line longer than the model reads is not
truncated but cut into pieces that fit, at sentence ends where it can (a sentence longer than the limit is cut at
the limit), each piece translated on its own, and the outputs joined, so that the line still gets one output and
loses no words."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

from nmtkit.data.vocab import Vocab
from nmtkit.search.hypothesis import Hypothesis
from nmtkit.search.sources import Inputs, line_text

ENDS = (".", "!", "?", "…", ";", "。", "！", "？", "；")  #: what a token that ends a sentence ends with


def sentence_ends(tokens: Sequence[str]) -> list[int]:
    """The positions after which a sentence ends: a token ending with sentence-final punctuation, followed by one
    that begins a word (SentencePiece's ``▁``; every token of a word vocabulary) or by nothing."""
    words = not any(t.startswith("\u2581") for t in tokens)  # (a word vocabulary: every token begins a word)
    ends = []
    for k, token in enumerate(tokens):
        if token.rstrip().endswith(ENDS) and (words or k + 1 == len(tokens) or tokens[k + 1].startswith("\u2581")):
            ends.append(k + 1)
    return ends


def pieces(ids: Sequence[int], ends: Sequence[int], limit: int) -> list[list[int]]:
    """``ids`` cut into pieces of at most ``limit`` tokens: whole sentences (ending at ``ends``) packed greedily,
    a sentence longer than the limit cut at it."""
    bounds = [0, *[e for e in ends if 0 < e < len(ids)], len(ids)]
    out: list[list[int]] = []
    current: list[int] = []
    for start, end in zip(bounds, bounds[1:]):
        sentence = list(ids[start:end])
        if current and len(current) + len(sentence) > limit:
            out.append(current)
            current = []
        while len(sentence) > limit:
            out.append(sentence[:limit])
            sentence = sentence[limit:]
        current += sentence
    return out + [current] if current else out


class Splitter:
    """What cuts a line's text input ``stream`` (read with ``vocab``) into pieces of at most ``limit`` tokens."""

    def __init__(self, stream: str, vocab: Vocab, limit: int):
        self.stream, self.vocab, self.limit = stream, vocab, limit

    def __call__(self, inputs: Inputs, raw: Optional[bytes] = None, index: int = 0) -> list[Inputs]:
        """``inputs`` in pieces; ``raw``: line ``index``'s field the ids were read from, whose words a word
        vocabulary's ids are one for one (a word outside the vocabulary, ``<unk>``, still ends its sentence:
        "seven."), read only where the line is cut."""
        ids = list(inputs[self.stream])
        if len(ids) <= self.limit:
            return [inputs]
        words = line_text(index, raw).split() if raw is not None and self.vocab.kind == "word" else []
        tokens = words if len(words) == len(ids) else self.vocab.id_to_token(ids)
        return [{**inputs, self.stream: piece} for piece in pieces(ids, sentence_ends(tokens), self.limit)]


def joined(parts: Sequence[Sequence[Hypothesis]], length_penalty: float) -> list[Hypothesis]:
    """The n-best hypotheses of a line from those of its pieces, best first: the k-th joined of each piece's k-th (its
    last where it has fewer), tokens end to end, log-probabilities summed, scored by log p / length^alpha over the
    whole (``</s>`` counted once per piece), then ranked by that score (as every n-best list is). Attention is not
    kept across pieces."""
    out = []
    for k in range(max(map(len, parts))):
        chosen = [hyps[min(k, len(hyps) - 1)] for hyps in parts]
        tokens = [t for h in chosen for t in h.tokens]
        logprob = sum(h.logprob for h in chosen)
        length = len(tokens) + len(chosen)
        out.append(replace(chosen[0], tokens=tokens, logprob=logprob,
                           score=logprob / length ** length_penalty if length_penalty else logprob, attention={}))
    return sorted(out, key=lambda h: -h.score)  # (stable: equal scores keep their order)
