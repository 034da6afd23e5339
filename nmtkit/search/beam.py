"""Beam search, batched over sentences and beams; written once for every model.

Each step expands the K live hypotheses of every sentence, takes the 2K best candidates,
finalises those that end with ``</s>`` among the first K, and keeps the K best others.
A sentence is done when it has K finished hypotheses (or reaches its length limit, where
``</s>`` is forced); done sentences leave the batch. Finished hypotheses are ranked by
log-probability / length^alpha (``alpha = length_penalty``; 0 ranks by raw probability).

:class:`BeamSearch` holds a search between steps, so that new sentences may join it while others are searched
(continuous batching, for a model whose states merge: ``Seq2Seq.merges_states``); each sentence counts its own
steps. :func:`beam_search` searches one batch with it.

A step reads one pair of flags from the device (whether any candidate finished, whether any
sentence is done); it reads more only in steps where hypotheses finish. Length limits are
checked against a host copy of the nearest one.
"""
from __future__ import annotations

from typing import Hashable, Sequence, cast

import torch

from nmtkit.data.batching import Batch
from nmtkit.data.vocab import BOS, EOS
from nmtkit.models.seq2seq import Seq2Seq, output_lengths
from nmtkit.models.state import DecoderState
from nmtkit.search.hypothesis import Hypothesis, append_attention, collect_attention
from nmtkit.search.top_k import top_k
from nmtkit.search.unwritten import mask_unwritten


class BeamSearch:
    """A beam search over the sentences :meth:`add` brings in (each with a tag of the caller's); :meth:`step` advances
    every live sentence by one token and gives back the ones that are done, tagged, with their ``n_best``
    hypotheses, best first. Sentences may be added while others are live where the model's states merge."""

    def __init__(self, model: Seq2Seq, beam_size: int = 5, n_best: int = 1, max_len_a: float = 1.5,
                 max_len_b: int = 10, length_penalty: float = 1.0, attention: bool = False):
        self.model, self.k, self.n_best = model, beam_size, min(n_best, beam_size)
        self.max_len_a, self.max_len_b, self.length_penalty, self.attention = max_len_a, max_len_b, length_penalty, attention
        self.tags: dict[int, Hashable] = {}  # by sentence number: each live sentence's tag
        self.finished: dict[int, list[Hypothesis]] = {}  # by sentence number: its finished hypotheses
        self.added = 0  # sentences added so far (the next one's number)

    @property
    def size(self) -> int:
        """How many sentences are live."""
        return len(self.tags)

    @torch.no_grad()
    def add(self, batch: Batch, tags: Sequence[Hashable]) -> None:
        """Bring the sentences of ``batch`` (on the model's device) into the search, tagged ``tags``."""
        n, k = batch.size, self.k
        device = batch.device
        state = self.model.encode(batch).reorder(torch.arange(n, device=device).repeat_interleave(k), beams=k)
        limit = output_lengths(self.model, batch, self.max_len_a, self.max_len_b)
        numbers = torch.arange(self.added, self.added + n, device=device)
        scores = torch.full((n, k), -torch.inf, device=device)
        scores[:, 0] = 0.0  # all beams start identical: expand only the first
        prev = torch.full((n * k,), BOS, dtype=torch.long, device=device)
        new = (numbers, limit, torch.zeros_like(limit), torch.zeros_like(limit), scores, prev)
        nearest = int(limit.min())
        if not self.size:
            self.state, self.tokens = state, torch.zeros((n * k, 0), dtype=torch.long, device=device)
            self.history: dict[str, torch.Tensor] = {}
            self.numbers, self.limit, self.count, self.age, self.scores, self.prev = new
            self.slack = nearest  # of the live sentences, steps until the nearest reaches its limit (on the host)
        else:
            if not self.model.merges_states:
                raise ValueError(f"{type(self.model).__name__}: its decoding states do not merge; search one batch "
                                 "at a time")
            if self.attention:
                raise ValueError("attention is not collected for sentences added to a running search")
            self.state = DecoderState.merged([self.state, state])
            self.tokens = torch.cat([self.tokens, self.tokens.new_zeros(n * k, self.tokens.size(1))])
            old = (self.numbers, self.limit, self.count, self.age, self.scores, self.prev)
            self.numbers, self.limit, self.count, self.age, self.scores, self.prev = (
                torch.cat([a, b]) for a, b in zip(old, new))
            self.slack = min(self.slack, nearest)
        for number, tag in zip(range(self.added, self.added + n), tags):
            self.tags[number], self.finished[number] = tag, []
        self.added += n

    @torch.no_grad()
    def step(self) -> list[tuple[Hashable, list[Hypothesis]]]:
        """One token more for every live sentence; the sentences done at this step, with their hypotheses."""
        b, k = self.size, self.k
        device = self.scores.device
        lp, state, attn = self.model.decode_step(self.prev, self.state)
        mask_unwritten(lp)
        if self.attention:
            self.history = append_attention(self.history, attn)
        vocab = lp.size(1)
        lp = lp.view(b, k, vocab)
        forced = self.limit <= self.age
        if self.slack <= 0:
            eos_only = torch.arange(vocab, device=device) == EOS
            lp[forced] = torch.where(eos_only, lp[forced], -torch.inf)
        self.age += 1
        self.slack -= 1
        cand, index = top_k(lp.add_(self.scores.unsqueeze(2)).view(b, k * vocab), 2 * k)  # (lp is the step's own)
        origin, word = index // vocab, index % vocab
        is_eos = word == EOS
        row_base = torch.arange(b, device=device).unsqueeze(1) * k
        # finalise </s> candidates ranked among the first k
        final = is_eos[:, :k] & torch.isfinite(cand[:, :k])
        self.count += final.sum(1)
        done = (self.count >= k) | forced
        any_final, any_done = torch.stack([final.any(), done.any()]).tolist()  # the step's one read
        if any_final:
            i, j = final.nonzero(as_tuple=True)
            final_rows = (row_base[i, 0] + origin[i, j]).tolist()
            width = self.tokens.size(1)  # (a row's own tokens are its last age - 1: merged rows are padded before)
            for number, row, steps, words, logprob in zip(self.numbers[i].tolist(), final_rows, self.age[i].tolist(),
                                                          self.tokens[final_rows].tolist(), cand[i, j].tolist()):
                divisor = steps ** self.length_penalty if self.length_penalty else 1.0
                self.finished[number].append(Hypothesis(words[width - steps + 1:], logprob, logprob / divisor,
                                                        collect_attention(self.history, row, steps)))
        # keep the k best candidates that do not end the sentence (-inf where fewer than k are left)
        scores, pick = cand.masked_fill(is_eos, -torch.inf).topk(k, dim=1)
        rows = row_base + origin.gather(1, pick)
        prev = word.gather(1, pick)
        ended: list[tuple[Hashable, list[Hypothesis]]] = []
        if any_done:  # done sentences leave the batch
            for number in self.numbers[done].tolist():
                found = sorted(self.finished.pop(number), key=lambda h: -h.score)[:self.n_best]
                ended.append((self.tags.pop(number), found))
            keep = (~done).nonzero().flatten()
            scores, rows, prev = scores[keep], rows[keep], prev[keep]
            self.numbers, self.limit, self.count, self.age = (x[keep] for x in (self.numbers, self.limit, self.count,
                                                                                self.age))
            self.slack = int((self.limit - self.age).min()) if keep.numel() else 0
        rows, prev = rows.view(-1), prev.view(-1)
        self.tokens = torch.cat([self.tokens[rows], prev.unsqueeze(1)], 1)
        self.state = state.reorder(rows, within_sentences=not any_done, beams=k)  # (k rows a sentence, always)
        self.history = {name: h[rows] for name, h in self.history.items()}
        self.scores, self.prev = scores, prev
        return ended


def beam_search(model: Seq2Seq, batch: Batch, beam_size: int = 5, n_best: int = 1, max_len_a: float = 1.5,
                max_len_b: int = 10, length_penalty: float = 1.0, attention: bool = False) -> list[list[Hypothesis]]:
    """The ``n_best`` hypotheses of each sentence of ``batch``, best first."""
    search = BeamSearch(model, beam_size, n_best, max_len_a, max_len_b, length_penalty, attention)
    search.add(batch, range(batch.size))
    found: list[list[Hypothesis]] = [[] for _ in range(batch.size)]
    while search.size:
        for i, hypotheses in search.step():
            found[cast(int, i)] = hypotheses
    return found
