"""Padded batches, and the length-bucketed, shuffled, rank-split training batch order."""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import torch

from nmtkit.data.shards import Shard
from nmtkit.data.vocab import BOS, EOS, PAD


@dataclass
class Batch:
    """Source ids ``[B, S]`` with lengths, and optionally target input/output ``[B, T]``.

    ``tgt_in`` starts with ``<s>``; ``tgt_out`` is the same sentence shifted left and ending
    with ``</s>``. Padding is 0 everywhere.
    """

    src: torch.Tensor
    src_lens: torch.Tensor
    tgt_in: Optional[torch.Tensor] = None
    tgt_out: Optional[torch.Tensor] = None

    @property
    def size(self) -> int:
        return self.src.size(0)

    @property
    def tgt_tokens(self) -> int:
        """Non-pad target tokens, ``</s>`` included: what losses are normalised by."""
        return int((self.tgt_out != PAD).sum()) if self.tgt_out is not None else 0

    def reversed_target(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(tgt_in, tgt_out)`` of the target read right to left: ``<s> y_T .. y_1`` and ``y_T .. y_1 </s>``."""
        out = self.tgt_out
        lengths = (out != PAD).sum(1, keepdim=True)  # words + </s>
        k = torch.arange(out.size(1), device=out.device).unsqueeze(0)
        words = out.gather(1, (lengths - 2 - k).clamp(min=0))
        rev_out = torch.where(k < lengths - 1, words, torch.where(k == lengths - 1, EOS, PAD))
        rev_in = torch.cat([torch.full_like(out[:, :1], BOS), rev_out[:, :-1]], 1)
        return rev_in.masked_fill(k >= lengths, PAD), rev_out

    def to(self, device: torch.device) -> "Batch":
        move = lambda t: None if t is None else t.to(device, non_blocking=True)
        return Batch(move(self.src), move(self.src_lens), move(self.tgt_in), move(self.tgt_out))


def pad(seqs: Sequence[Sequence[int]], bos: bool = False, eos: bool = False) -> torch.Tensor:
    """Stack id sequences into a ``[B, max_len]`` int64 tensor padded with 0."""
    extra = int(bos) + int(eos)
    out = np.zeros((len(seqs), max((len(s) for s in seqs), default=0) + extra), dtype=np.int64)
    for i, s in enumerate(seqs):
        n = len(s)
        if bos:
            out[i, 0] = BOS
        out[i, int(bos):int(bos) + n] = s
        if eos:
            out[i, int(bos) + n] = EOS
    return torch.from_numpy(out)


def make_batch(src: Sequence[Sequence[int]], tgt: Optional[Sequence[Sequence[int]]] = None) -> Batch:
    """A batch from id lists; sources get ``</s>`` appended, as in training."""
    src_t = pad(src, eos=True)
    lens = torch.tensor([len(s) + 1 for s in src], dtype=torch.int64)
    if tgt is None:
        return Batch(src_t, lens)
    return Batch(src_t, lens, pad(tgt, bos=True), pad(tgt, eos=True))


def bucket_batches(lengths: np.ndarray, batch_size: int, by_tokens: bool, rng: random.Random,
                   pool_batches: int = 100) -> list[np.ndarray]:
    """Split example indices into batches of similar length, in random order.

    Indices are shuffled, cut into pools of ``pool_batches`` batches, sorted by length within
    each pool, and cut into batches of ``batch_size`` sentences (or at most ``batch_size``
    padded tokens with ``by_tokens``); the batches are then shuffled.
    """
    order = np.array(rng.sample(range(len(lengths)), len(lengths)), dtype=np.int64)
    per_pool = pool_batches * (batch_size if not by_tokens else max(1, batch_size // max(1, int(lengths.mean()))))
    batches: list[np.ndarray] = []
    for start in range(0, len(order), per_pool):
        pool = order[start:start + per_pool]
        pool = pool[np.argsort(lengths[pool], kind="stable")]
        if not by_tokens:
            batches.extend(pool[i:i + batch_size] for i in range(0, len(pool), batch_size))
            continue
        begin, longest = 0, 0
        for i, idx in enumerate(pool):
            longest = max(longest, int(lengths[idx]))
            if (i - begin + 1) * longest > batch_size and i > begin:
                batches.append(pool[begin:i])
                begin, longest = i, int(lengths[idx])
        batches.append(pool[begin:])
    rng.shuffle(batches)
    return batches


class TrainingBatches:
    """The batch order of each epoch over a list of shards, reproducible from (seed, epoch).

    Only one shard is in memory at a time. With ``world_size`` > 1 every rank computes the
    same order and takes every ``world_size``-th batch, so ranks do equal numbers of steps.
    Pairs whose longer side exceeds ``max_len`` tokens are skipped and counted in ``skipped``.
    """

    def __init__(self, shards: Sequence[Path], batch_size: int, by_tokens: bool = False, seed: int = 1,
                 rank: int = 0, world_size: int = 1, max_len: Optional[int] = None):
        self.shards, self.batch_size, self.by_tokens = list(shards), batch_size, by_tokens
        self.seed, self.rank, self.world_size, self.max_len = seed, rank, world_size, max_len
        self.skipped = 0

    def epoch(self, epoch: int, skip: int = 0) -> Iterator[Batch]:
        """Yield this rank's batches of ``epoch``, after skipping the first ``skip`` of them."""
        rng = random.Random(self.seed * 1_000_003 + epoch)
        shard_order = rng.sample(range(len(self.shards)), len(self.shards))
        position = 0
        self.skipped = 0
        for si in shard_order:
            shard = Shard(self.shards[si])
            lengths = np.maximum(shard.lengths("src"), shard.lengths("tgt")) + 1
            keep = np.arange(len(shard))
            if self.max_len:
                keep = keep[lengths <= self.max_len + 1]
                self.skipped += len(shard) - len(keep)
            batches = bucket_batches(lengths[keep], self.batch_size, self.by_tokens, rng)
            usable = len(batches) - len(batches) % self.world_size
            for b in range(self.rank, usable, self.world_size):
                if position >= skip:
                    idx = keep[batches[b]]
                    yield make_batch([shard.get("src", i) for i in idx], [shard.get("tgt", i) for i in idx])
                position += 1
