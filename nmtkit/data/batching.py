"""Padded batches of named input streams, and the length-bucketed, shuffled, rank-split training batch order."""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence, Union

import numpy as np
import torch

from nmtkit.data.shards import Shard
from nmtkit.data.streams import TARGET, TOKENS
from nmtkit.data.vocab import BOS, EOS, PAD
from nmtkit.errors import NmtkitError


@dataclass
class Stream:
    """One named input of a batch: token ids ``[B, S]`` (0-padded, ``</s>`` appended) or float
    features ``[B, S, D]`` (zero-padded), with the real length of each row ``[B]``."""

    data: torch.Tensor
    lengths: torch.Tensor

    @property
    def is_tokens(self) -> bool:
        return not self.data.is_floating_point()

    @property
    def mask(self) -> torch.Tensor:
        """``[B, S]``, True at real positions."""
        return torch.arange(self.data.size(1), device=self.lengths.device).unsqueeze(0) < self.lengths.unsqueeze(1)

    def to(self, device: torch.device) -> "Stream":
        return Stream(self.data.to(device, non_blocking=True), self.lengths.to(device, non_blocking=True))

    def pinned(self) -> "Stream":
        """The stream in page-locked host memory (copies to a GPU then run asynchronously)."""
        return Stream(self.data.pin_memory(), self.lengths.pin_memory())


@dataclass
class Batch:
    """Named input streams (``src``, ``mt``, ``image``, ...) and optionally the target.

    ``tgt_in`` ``[B, T]`` starts with ``<s>``; ``tgt_out`` is the same sentence shifted left and
    ending with ``</s>``. Padding is 0 everywhere. Models read the streams they declare
    (``batch["src"]``); the search and the trainer never look inside.
    """

    inputs: dict[str, Stream] = field(default_factory=dict)
    tgt_in: Optional[torch.Tensor] = None
    tgt_out: Optional[torch.Tensor] = None

    def __getitem__(self, name: str) -> Stream:
        return self.inputs[name]

    def __contains__(self, name: str) -> bool:
        return name in self.inputs

    @property
    def size(self) -> int:
        return next(iter(self.inputs.values())).data.size(0)

    @property
    def device(self) -> torch.device:
        return next(iter(self.inputs.values())).data.device

    @property
    def tgt_tokens(self) -> int:
        """Non-pad target tokens, ``</s>`` included: what losses are normalised by."""
        return int(self.tgt_out.ne(PAD).sum()) if self.tgt_out is not None else 0

    def shape_text(self) -> str:
        """Sizes for messages: ``32 sentences, src 41 / tgt 38 positions``."""
        dims = [f"{name} {s.data.size(1)}" for name, s in self.inputs.items()]
        if self.tgt_in is not None:
            dims.append(f"tgt {self.tgt_in.size(1)}")
        return f"{self.size} sentences, {' / '.join(dims)} positions"

    def with_target(self, tgt_in: torch.Tensor, tgt_out: Optional[torch.Tensor] = None) -> "Batch":
        """The same inputs with another target."""
        return replace(self, tgt_in=tgt_in, tgt_out=self.tgt_out if tgt_out is None else tgt_out)

    def reversed_target(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(tgt_in, tgt_out)`` of the target read right to left: ``<s> y_T .. y_1`` and ``y_T .. y_1 </s>``."""
        out = self.tgt_out
        assert out is not None, "a batch without a target"
        lengths = out.ne(PAD).sum(1, keepdim=True)  # words + </s>
        k = torch.arange(out.size(1), device=out.device).unsqueeze(0)
        words = out.gather(1, (lengths - 2 - k).clamp(min=0))
        rev_out = torch.where(k < lengths - 1, words, torch.where(k == lengths - 1, EOS, PAD))
        rev_in = torch.cat([torch.full_like(out[:, :1], BOS), rev_out[:, :-1]], 1)
        return rev_in.masked_fill(k >= lengths, PAD), rev_out

    def to(self, device: torch.device) -> "Batch":
        move = lambda t: None if t is None else t.to(device, non_blocking=True)
        return Batch({k: s.to(device) for k, s in self.inputs.items()}, move(self.tgt_in), move(self.tgt_out))

    def pinned(self) -> "Batch":
        """The batch in page-locked host memory (:meth:`Stream.pinned`)."""
        pin = lambda t: None if t is None else t.pin_memory()
        return Batch({k: s.pinned() for k, s in self.inputs.items()}, pin(self.tgt_in), pin(self.tgt_out))


Ids = Union[Sequence[int], np.ndarray]


def padded_width(width: int, multiple: int = 1, cap: Optional[int] = None) -> int:
    """``width`` rounded up to a multiple of ``multiple`` (batch shapes from a small set: GPU kernels are chosen
    and memory is cached per shape), but not past ``cap`` (a model's table of positions) unless ``width`` is."""
    rounded = -(-width // multiple) * multiple
    return max(width, min(rounded, cap)) if cap is not None else rounded


def pad(seqs: Sequence[Ids], bos: bool = False, eos: bool = False, multiple: int = 1,
        cap: Optional[int] = None) -> torch.Tensor:
    """Stack id sequences into a ``[B, width]`` int64 tensor padded with 0: the longest sequence's width, or more
    (:func:`padded_width`)."""
    extra = int(bos) + int(eos)
    width = padded_width(max((len(s) for s in seqs), default=0) + extra, multiple, cap)
    out = np.zeros((len(seqs), width), dtype=np.int64)
    for i, s in enumerate(seqs):
        n = len(s)
        if bos:
            out[i, 0] = BOS
        out[i, int(bos):int(bos) + n] = s
        if eos:
            out[i, int(bos) + n] = EOS
    return torch.from_numpy(out)


def make_stream(items: Sequence[Ids], multiple: int = 1, cap: Optional[int] = None) -> Stream:
    """A padded stream from id lists (``</s>`` appended, as in training; possibly empty; its width as :func:`pad`
    makes it) or from feature arrays ``[n, D]`` (2-D; as long as the longest)."""
    first = np.asarray(items[0]) if len(items) else np.zeros(0, np.int64)
    if first.ndim == 2:
        arrays = [np.asarray(x) for x in items]
        out = np.zeros((len(arrays), max(len(a) for a in arrays), first.shape[-1]), dtype=np.float32)
        for i, a in enumerate(arrays):
            out[i, :len(a)] = a
        return Stream(torch.from_numpy(out), torch.tensor([len(a) for a in arrays], dtype=torch.int64))
    return Stream(pad(items, eos=True, multiple=multiple, cap=cap),
                  torch.tensor([len(s) + 1 for s in items], dtype=torch.int64))


Inputs = Union[Mapping[str, Sequence], Sequence[Sequence[int]]]


def make_batch(inputs: Inputs, tgt: Optional[Sequence[Ids]] = None, multiple: int = 1,
               caps: Optional[Mapping[str, int]] = None) -> Batch:
    """A batch from ``{stream: items}`` (a plain list of id lists is the ``src`` stream) and target id lists; token
    widths padded up to a multiple of ``multiple``, within ``caps`` (widths by stream, ``tgt`` for the target)."""
    named = dict(inputs) if isinstance(inputs, Mapping) else {"src": inputs}
    caps = caps or {}
    streams = {name: make_stream(items, multiple, caps.get(name)) for name, items in named.items()}
    if tgt is None:
        return Batch(streams)
    cap = caps.get(TARGET)
    return Batch(streams, pad(tgt, bos=True, multiple=multiple, cap=cap), pad(tgt, eos=True, multiple=multiple, cap=cap))


def pool_size(lengths: np.ndarray, batch_size: int, by_tokens: bool, pool_batches: int = 100) -> int:
    """The examples of one pool of :func:`bucket_batches`: ``pool_batches`` batches' worth (in tokens, at the mean
    length of ``lengths``; of one token where there are none, a shard whose every example the length filter took)."""
    mean = int(lengths.mean()) if len(lengths) else 1
    return pool_batches * (batch_size if not by_tokens else max(1, batch_size // max(1, mean)))


def bucket_batches(lengths: np.ndarray, batch_size: int, by_tokens: bool, rng: random.Random,
                   pool_batches: int = 100) -> list[np.ndarray]:
    """Split example indices into batches of similar length, in random order.

    Indices are shuffled, cut into pools of ``pool_batches`` batches, sorted by length within
    each pool, and cut into batches of ``batch_size`` sentences (or at most ``batch_size``
    padded tokens with ``by_tokens``); the batches are then shuffled.
    """
    order = np.array(rng.sample(range(len(lengths)), len(lengths)), dtype=np.int64)
    per_pool = pool_size(lengths, batch_size, by_tokens, pool_batches)
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


def examples_batch(examples: Sequence[tuple[Shard, int]], target: bool = True, multiple: int = 1,
                   caps: Optional[Mapping[str, int]] = None, cut: Optional[int] = None) -> Batch:
    """Examples ``(shard, index)`` as a batch: every input stream (a text input's first ``cut`` tokens, if given),
    and the target if asked and present (widths as :func:`make_batch` pads them)."""
    shard = examples[0][0]
    streams = shard.streams
    inputs = {name: [sh.get(name, i)[:cut] if cut is not None and shard.kind(name) == TOKENS else sh.get(name, i)
                     for sh, i in examples] for name in streams if name != TARGET}
    tgt = [sh.get(TARGET, i) for sh, i in examples] if target and TARGET in streams else None
    return make_batch(inputs, tgt, multiple, caps)


def example_lengths(shard: Shard, inputs_only: bool = False) -> np.ndarray:
    """Each example's length for bucketing and the length filter: its longest text stream (the inputs'
    only, if asked), plus one (``</s>``); feature streams (an image's fixed grid) do not count."""
    text = [shard.lengths(s) for s in shard.streams
            if shard.kind(s) == TOKENS and not (inputs_only and s == TARGET)]
    return np.max(text, axis=0) + 1 if text else np.ones(len(shard), dtype=np.int64)


def stamp(path: Path) -> tuple[int, int, int]:
    """What tells a file from another one put in its place: its inode, size and time of change."""
    info = path.stat()
    return info.st_ino, info.st_size, info.st_mtime_ns


class TrainingBatches:
    """The batch order of each epoch over a list of shards, reproducible from (seed, epoch).

    Shards are read in a random order and bucketed one at a time, or, where a shard holds fewer than two pools of
    examples (:func:`pool_size`; a corpus written with a small ``--shard-size``), together with the next ones until
    they hold two pools: length bucketing then sorts as many examples as in a large shard, and memory holds one
    large shard or a few small ones. With ``world_size`` > 1 every rank computes the
    same order and takes every ``world_size``-th batch, so ranks do equal numbers of steps.
    Examples whose longest text stream exceeds ``max_len`` tokens are skipped and counted in ``skipped``. Token
    widths are padded up to a multiple of ``pad_multiple`` within ``caps`` (:func:`make_batch`).
    """

    def __init__(self, shards: Sequence[Path], batch_size: int, by_tokens: bool = False, seed: int = 1,
                 rank: int = 0, world_size: int = 1, max_len: Optional[int] = None, pad_multiple: int = 1,
                 caps: Optional[Mapping[str, int]] = None):
        self.shards, self.batch_size, self.by_tokens = [Path(p) for p in shards], batch_size, by_tokens
        self.seed, self.rank, self.world_size, self.max_len = seed, rank, world_size, max_len
        self.pad_multiple, self.caps = pad_multiple, dict(caps or {})
        self.skipped = 0
        self.stamps = {path: stamp(path) for path in self.shards}  # (as training began: see shard)

    def shard(self, path: Path) -> Shard:
        """The shard at ``path``, refused in one line where it is not the file it was when training began (the
        corpus written again under the run, say: its examples would mix with the first's)."""
        try:
            now = stamp(path)
        except OSError:  # (gone: Shard says so in one line)
            return Shard(path)
        if now != self.stamps[path]:
            raise NmtkitError(f"{path}: changed since training began (the corpus written again?); train on a corpus "
                              "left as it is, or start a new run")
        return Shard(path)

    def epoch(self, epoch: int, skip: int = 0) -> Iterator[Batch]:
        """Yield this rank's batches of ``epoch``, after skipping the first ``skip`` of them."""
        rng = random.Random(self.seed * 1_000_003 + epoch)
        shard_order = rng.sample(range(len(self.shards)), len(self.shards))
        position = total = 0
        self.skipped = 0
        window: list[tuple[Shard, np.ndarray, np.ndarray]] = []  # shards bucketed together: kept examples, lengths
        for k, si in enumerate(shard_order):
            shard = self.shard(self.shards[si])
            lengths = example_lengths(shard)
            total += len(shard)
            keep = np.arange(len(shard))
            if self.max_len:
                keep = keep[lengths <= self.max_len + 1]
                self.skipped += len(shard) - len(keep)
            window.append((shard, keep, lengths[keep]))
            held = np.concatenate([kept_lengths for _, _, kept_lengths in window])
            if len(held) < 2 * pool_size(held, self.batch_size, self.by_tokens) and k < len(shard_order) - 1:
                continue  # too few to bucket well: with the next shard
            owner = np.concatenate([np.full(len(kept), w) for w, (_, kept, _) in enumerate(window)])
            index = np.concatenate([kept for _, kept, _ in window])
            batches = bucket_batches(held, self.batch_size, self.by_tokens, rng)
            usable = len(batches) - len(batches) % self.world_size
            for b in range(self.rank, usable, self.world_size):
                if position >= skip:
                    examples = [(window[owner[j]][0], int(index[j])) for j in batches[b]]
                    yield examples_batch(examples, True, self.pad_multiple, self.caps)
                position += 1
            window = []
        if position == 0:  # (not one batch this epoch: training would go round empty epochs for ever)
            raise NmtkitError(self._why_no_batch(total), exit_code=2)

    def _why_no_batch(self, examples: int) -> str:
        """The error of an epoch without one batch for this rank, of a corpus of ``examples``."""
        if self.skipped == examples:
            return (f"--max-len {self.max_len}: every one of the corpus's {examples:,} training examples is longer, "
                    f"so no batch is left to train on")
        return (f"the training corpus makes fewer batches than the {self.world_size} processes training on it "
                f"({examples - self.skipped:,} examples in batches of {self.batch_size}"
                f"{' tokens' if self.by_tokens else ''})")
