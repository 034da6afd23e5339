"""Lexically constrained beam search with dynamic beam allocation (Post and Vilar 2018, "Fast Lexically
Constrained Decoding with Dynamic Beam Allocation for Neural Machine Translation"): every output contains each of
its sentence's constraints, target phrases given as token ids (``translate --constraints``).

Each hypothesis tracks which constraints it has met and the one it is in the middle of (:class:`Progress`). A
step's candidates for each hypothesis are its k best next tokens, every token that advances a constraint (the next
token of the one in progress, or the first token of any unmet one) and ``</s>``; ``</s>`` is allowed only once all
constraints are met. The candidates are grouped into banks by how many constraint tokens they have met, and the k
slots of the beam go to the banks in turn, the most advanced first, each giving its best candidate left (Post and
Vilar's allocation, as round robin: a bank without candidates gives its slots to the others), so hypotheses that
have met few constraints are not crowded out by those with higher model scores, nor the reverse.

A phrase broken off midway loses its progress. The output length limit grows to fit the constraints after any
target prefix (never past the model's table of positions). If no
hypothesis can meet every constraint within the limit (a phrase the model can never produce, say), the search
still ends, and its best output is one that meets the most constraint tokens: :func:`unmet` tells which it lacks,
for a warning.

The model steps run batched over every live hypothesis of every sentence; the candidate bookkeeping runs on the
host, one sentence at a time (a few dozen candidates each).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch

from nmtkit.data.batching import Batch
from nmtkit.data.vocab import BOS, EOS
from nmtkit.models.seq2seq import Seq2Seq, output_lengths
from nmtkit.search.hypothesis import Hypothesis, append_attention, collect_attention
from nmtkit.search.prefix import prefix_lengths
from nmtkit.search.unwritten import mask_unwritten

CONSTRAINTS = "constraints"  #: the batch stream of each sentence's constraints, phrases separated by ``</s>``
Phrases = list[list[int]]


def phrases_of(ids: Sequence[int]) -> Phrases:
    """A sentence's constraints from its stream: the phrases between ``</s>`` separators (empty ones dropped)."""
    phrases: Phrases = []
    current: list[int] = []
    for i in list(ids) + [EOS]:
        if i == EOS:
            if current:
                phrases.append(current)
            current = []
        else:
            current.append(int(i))
    return phrases


def flat(phrases: Sequence[Sequence[int]]) -> list[int]:
    """Phrases as one stream item, ``</s>`` between them."""
    out: list[int] = []
    for phrase in filter(None, phrases):
        out += [EOS, *phrase] if out else list(phrase)
    return out


@dataclass(frozen=True)
class Progress:
    """The constraints a hypothesis has met (``met[c]``), and the one it is writing (``current``, -1: none) with
    the number of its tokens written (``position``)."""

    met: tuple[bool, ...]
    current: int = -1
    position: int = 0

    def count(self, phrases: Phrases) -> int:
        """Constraint tokens met: of the phrases met, and of the one in progress."""
        return sum(len(p) for p, m in zip(phrases, self.met) if m) + self.position

    @property
    def done(self) -> bool:
        return all(self.met)

    def wanted(self, phrases: Phrases) -> set[int]:
        """The tokens that advance a constraint from here."""
        if self.current >= 0:
            return {phrases[self.current][self.position]}
        return {p[0] for p, m in zip(phrases, self.met) if not m}

    def advance(self, token: int, phrases: Phrases) -> "Progress":
        """The progress after writing ``token``: the phrase in progress one token further, or, where the token breaks
        it off, the longest end of what was written that begins an unmet phrase (as Knuth-Morris-Pratt's matching
        falls back: "a b a" then "b" is 2 tokens of "a b a c", and "s s" then "s" still 2 of "s s und")."""
        if self.current >= 0 and token == phrases[self.current][self.position]:
            return self._written(self.current, self.position + 1, phrases)
        written = phrases[self.current][:self.position] + [token] if self.current >= 0 else [token]
        for k in range(len(written), 0, -1):
            end = written[-k:]
            for c, phrase in enumerate(phrases):
                if not self.met[c] and phrase[:k] == end:
                    return self._written(c, k, phrases)
        return Progress(self.met)

    def _written(self, c: int, position: int, phrases: Phrases) -> "Progress":
        """Phrase ``c`` written up to ``position``: in progress, or met where it is whole."""
        if position < len(phrases[c]):
            return Progress(self.met, c, position)
        return Progress(tuple(m or k == c for k, m in enumerate(self.met)))


@dataclass
class _Live:
    """A live hypothesis on the host: its tokens, score and progress."""

    tokens: list[int]
    score: float
    progress: Progress
    row: int = 0  #: its row in the decoder state


@dataclass
class _Sentence:
    phrases: Phrases
    limit: int
    live: list[_Live]
    finished: list[tuple[int, Hypothesis]] = field(default_factory=list)  # (constraint tokens met, hypothesis)

    @property
    def done(self) -> bool:
        return not self.live

    @property
    def total(self) -> int:
        """Constraint tokens in all."""
        return sum(map(len, self.phrases))


def unmet(tokens: Sequence[int], phrases: Phrases) -> list[int]:
    """The constraints (their indices) that ``tokens`` does not contain, each phrase needing its own occurrence
    (as the search counts them: a phrase met once is not met again)."""
    progress = Progress((False,) * len(phrases))
    for token in tokens:
        progress = progress.advance(token, phrases)
    return [c for c, m in enumerate(progress.met) if not m]


@torch.no_grad()
def constrained_beam_search(model: Seq2Seq, batch: Batch, constraints: Sequence[Phrases], beam_size: int = 5,
                            n_best: int = 1, max_len_a: float = 1.5, max_len_b: int = 10,
                            length_penalty: float = 1.0, attention: bool = False) -> list[list[Hypothesis]]:
    """The ``n_best`` hypotheses of each sentence of ``batch`` that contain its ``constraints`` (phrases of target
    ids; none: a plain beam search), best first; where no hypothesis contains them all, the best of those that
    contain fewer."""
    k, device = beam_size, batch.device
    state = model.encode(batch)
    limits = output_lengths(model, batch, max_len_a, max_len_b).tolist()
    most = model.output_limit()  # (room for the constraints after any prefix, within the model's table of positions)
    sentences = [_Sentence(phrases, min(max(limit, start + sum(map(len, phrases))), most or 1 << 30),
                           [_Live([], 0.0, Progress((False,) * len(phrases)), s)])
                 for s, (phrases, limit, start) in enumerate(zip(constraints, limits, prefix_lengths(batch).tolist()))]
    prev = torch.full((len(sentences),), BOS, dtype=torch.long, device=device)
    history: dict[str, torch.Tensor] = {}
    t = 0
    while True:
        active = [s for s in sentences if not s.done]
        if not active:
            break
        lp, state, attn = model.decode_step(prev, state)
        if attention:
            history = append_attention(history, attn)
        lp = mask_unwritten(lp.float())
        top_lp, top_ids = lp.topk(min(k + 1, lp.size(1)), dim=1)  # (k best others even where </s> is among them)
        extra = [(h.row, token) for s in active for h in s.live for token in h.progress.wanted(s.phrases) | {EOS}]
        rows = torch.tensor([r for r, _ in extra], dtype=torch.long, device=device)
        tokens = torch.tensor([w for _, w in extra], dtype=torch.long, device=device)
        extra_lp = lp[rows, tokens].tolist()
        step_lp: dict[int, dict[int, float]] = {}
        for (row, token), value in zip(extra, extra_lp):
            step_lp.setdefault(row, {})[token] = value
        for row, (values, ids) in enumerate(zip(top_lp.tolist(), top_ids.tolist())):
            step_lp.setdefault(row, {}).update(zip(ids, values))
        origin: list[int] = []
        next_tokens: list[int] = []
        for s in active:
            chosen = _allocate(s, step_lp, t, k, length_penalty, history, attention)
            s.live = []
            for h in chosen:
                s.live.append(_Live(h.tokens, h.score, h.progress, len(origin)))
                origin.append(h.row)
                next_tokens.append(h.tokens[-1])
        t += 1
        if not origin:
            break
        index = torch.tensor(origin, dtype=torch.long, device=device)
        state = state.reorder(index)
        history = {name: h[index] for name, h in history.items()}
        prev = torch.tensor(next_tokens, dtype=torch.long, device=device)
    results = []
    for s in sentences:  # those meeting more constraint tokens first (a sentence whose every candidate had
        ranked = sorted(s.finished, key=lambda f: (-f[0], -f[1].score))  # probability 0 gets an empty output)
        results.append([h for _, h in ranked[:n_best]] or [Hypothesis([], -float("inf"), -float("inf"))])
    return results


def _allocate(s: _Sentence, step_lp: dict[int, dict[int, float]], t: int, k: int, length_penalty: float,
              history: dict[str, torch.Tensor], attention: bool) -> list[_Live]:
    """One sentence's step: its candidates (each live hypothesis' scored next tokens; ``</s>`` only once every
    constraint is met, or at the length limit) in banks by constraint tokens met; the beam's k slots go to the
    banks in turn, most met first, each giving its best candidate left. Chosen ``</s>`` candidates finish; the
    others are returned (``row``: the state row each came from). None once k hypotheses meeting every constraint
    have finished, or at the limit."""
    forced = t >= s.limit  # only </s> from here
    banks: dict[int, list[tuple[float, int, _Live]]] = {}
    for h in s.live:
        for token, value in step_lp[h.row].items():
            score = h.score + value
            if score == -float("inf") or (forced and token != EOS) or (token == EOS and not h.progress.done
                                                                       and not forced):
                continue
            progress = h.progress if token == EOS else h.progress.advance(token, s.phrases)
            level = progress.count(s.phrases)
            banks.setdefault(level, []).append((score, token, _Live(h.tokens, score, progress, h.row)))
    for bank in banks.values():
        bank.sort(key=lambda c: -c[0])
    levels = sorted(banks, reverse=True)  # round robin over the banks, most met first: the candidates' order
    ordered = [banks[level][i] for i in range(max(map(len, banks.values()), default=0)) for level in levels
               if i < len(banks[level])]
    chosen: list[_Live] = []
    for rank, (score, token, h) in enumerate(ordered):
        if token == EOS:  # (as beam_search: a </s> among the first k finishes; the live ones are the k best others)
            if rank < k:
                divisor = (t + 1) ** length_penalty if length_penalty else 1.0
                weights = collect_attention(history, h.row, t + 1) if attention else {}
                s.finished.append((h.progress.count(s.phrases), Hypothesis(h.tokens, score, score / divisor, weights)))
        elif len(chosen) < k:
            chosen.append(_Live(h.tokens + [token], score, h.progress, h.row))
    if forced or sum(met == s.total for met, _ in s.finished) >= k:
        return []
    return chosen


def constraints_of(batch: Batch) -> Optional[list[Phrases]]:
    """Each sentence's constraints, if the batch has the stream (else None)."""
    if CONSTRAINTS not in batch:
        return None
    stream = batch[CONSTRAINTS]
    return [phrases_of(row[:int(n) - 1]) for row, n in zip(stream.data.tolist(), stream.lengths.tolist())]
