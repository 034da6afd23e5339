"""A model with fixed next-token log-probabilities, for unit tests of the search (no training).

Sentence ``i`` of a batch (its row) has a distribution over :data:`VOCAB` tokens for every
prefix: a seeded pseudo-random one, with ``</s>`` more likely as the prefix grows, unless a
script gives it. ``<pad>`` and ``<s>`` are never generated. The source attention of a step
is one-hot on source position ``prev % |x|`` (``|x|`` counting ``</s>``), so attention
rows show which token each row of a hypothesis was conditioned on.
"""
from __future__ import annotations

import math
import random
from functools import lru_cache
from typing import Mapping, Sequence

import torch

from nmtkit.data.batching import Batch
from nmtkit.data.vocab import BOS, EOS, PAD
from nmtkit.models.seq2seq import Seq2Seq
from nmtkit.models.state import DecoderState

VOCAB = 10  # <pad> <unk> <s> </s> and the words 4..9

Script = Mapping[tuple[int, ...], Mapping[int, float]]  # prefix -> {token: probability}; other tokens: 0


class ScriptedModel(Seq2Seq):
    """Next-token log-probabilities as a fixed function of (sentence id, prefix).

    ``scripts`` maps a sentence id to a :data:`Script`; prefixes it lacks fall back to the
    pseudo-random distribution of ``seed``.
    """

    def __init__(self, seed: int = 0, scripts: Mapping[int, Script] | None = None):
        super().__init__()
        self.seed, self.scripts = seed, dict(scripts or {})
        self.log_probs = lru_cache(maxsize=None)(self._log_probs)

    def _log_probs(self, sentence: int, prefix: tuple[int, ...]) -> tuple[float, ...]:
        """``log P(· | prefix)`` over the vocabulary, for sentence ``sentence``."""
        script = self.scripts.get(sentence, {})
        if prefix in script:
            return tuple(math.log(script[prefix][w]) if script[prefix].get(w, 0) > 0 else -math.inf
                         for w in range(VOCAB))
        g = random.Random(f"{self.seed} {sentence} {prefix}")
        logits = torch.tensor([g.gauss(0.0, 1.5) for _ in range(VOCAB)], dtype=torch.float64)
        logits[EOS] += 0.6 * len(prefix) - 1.5
        logits[[PAD, BOS]] = -math.inf
        return tuple(torch.log_softmax(logits, 0).tolist())

    def score(self, sentence: int, tokens: Sequence[int]) -> float:
        """The exact log-probability of ``tokens`` followed by ``</s>``."""
        tokens = tuple(tokens)
        return sum(self.log_probs(sentence, tokens[:i])[w] for i, w in enumerate(tokens + (EOS,)))

    def encode(self, batch: Batch) -> DecoderState:
        src = batch["src"]
        return DecoderState({"sentence": torch.arange(batch.size, device=batch.device),
                             "src_mask": src.mask, "src_len": src.lengths,
                             "prefix": torch.zeros(batch.size, 0, dtype=torch.long, device=batch.device)},
                            static={"sentence", "src_mask", "src_len"})

    def decode_step(self, prev: torch.Tensor, state: DecoderState):
        prefix = torch.cat([state["prefix"], prev.unsqueeze(1)], 1)  # <s> y_1 .. y_t
        lp = torch.tensor([self.log_probs(s, tuple(p[1:])) for s, p in zip(state["sentence"].tolist(), prefix.tolist())],
                          dtype=torch.float, device=prev.device)
        position = prev % state["src_len"]
        attention = torch.nn.functional.one_hot(position, state["src_mask"].size(1)).float()
        return lp, state.replace(prefix=prefix), {"source": attention}


def sources(n: int, seed: int = 1) -> list[list[int]]:
    """``n`` source sentences of 1 to 8 words."""
    g = random.Random(seed)
    return [[g.randrange(4, VOCAB) for _ in range(g.randrange(1, 9))] for _ in range(n)]


def limit(src: Sequence[int], a: float, b: int) -> int:
    """The output length limit of a source sentence: ⌊a·|x| + b⌋, at least 1."""
    return max(1, math.floor(a * len(src) + b))


def source_attention(src: Sequence[int], tokens: Sequence[int], width: int) -> torch.Tensor:
    """The attention rows ``[len(tokens) + 1, width]`` that :class:`ScriptedModel` gives ``tokens``."""
    prev = torch.tensor([BOS, *tokens])
    return torch.nn.functional.one_hot(prev % (len(src) + 1), width).float()
