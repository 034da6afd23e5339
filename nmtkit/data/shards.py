"""HDF5 shards and the corpus manifest.

A corpus is a folder holding ``manifest.json``, the vocabulary files and, per split,
shards ``train.000.h5``, ``train.001.h5``, ... Each shard stores each stream (``src``,
``tgt``, later extra sources) as one flat int32 ``tokens`` dataset plus an int64
``offsets`` dataset of length n+1, so sentence i of a stream is
``tokens[offsets[i]:offsets[i+1]]``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import h5py
import numpy as np

from nmtkit.data.text import PathLike
from nmtkit.data.vocab import Vocab, load_vocab
from nmtkit.errors import NmtkitError

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


class ShardWriter:
    """Collects sentences of one split and writes a shard each time ``shard_size`` are in hand."""

    def __init__(self, folder: PathLike, split: str, streams: Sequence[str], shard_size: int = 100_000):
        self.folder, self.split, self.streams, self.shard_size = Path(folder), split, list(streams), shard_size
        self.shards: list[dict] = []
        self._reset()

    def _reset(self) -> None:
        self._buf = {s: [] for s in self.streams}

    def add(self, **ids: Sequence[int]) -> None:
        """Add one example: a sequence of ids per stream."""
        for s in self.streams:
            self._buf[s].append(np.asarray(ids[s], dtype=np.int32))
        if len(self._buf[self.streams[0]]) >= self.shard_size:
            self.flush()

    def flush(self) -> None:
        """Write the buffered examples as the next shard (nothing if the buffer is empty)."""
        n = len(self._buf[self.streams[0]])
        if n == 0:
            return
        name = f"{self.split}.{len(self.shards):03d}.h5"
        with h5py.File(self.folder / name, "w") as f:
            for s in self.streams:
                seqs = self._buf[s]
                offsets = np.zeros(n + 1, dtype=np.int64)
                np.cumsum([len(x) for x in seqs], out=offsets[1:])
                g = f.create_group(s)
                g.create_dataset("tokens", data=np.concatenate(seqs) if offsets[-1] else np.zeros(0, np.int32))
                g.create_dataset("offsets", data=offsets)
        self.shards.append({"file": name, "sentences": n})
        self._reset()

    def close(self) -> list[dict]:
        """Flush the remainder and return the shard list for the manifest."""
        self.flush()
        return self.shards


class Shard:
    """One shard loaded in memory: per stream a flat token array and offsets."""

    def __init__(self, path: PathLike):
        self.path = Path(path)
        try:
            with h5py.File(self.path, "r") as f:
                self.data = {s: (f[s]["tokens"][()], f[s]["offsets"][()]) for s in f.keys()}
        except OSError as e:
            raise NmtkitError(f"{self.path}: cannot read shard ({e})") from None

    def __len__(self) -> int:
        return len(next(iter(self.data.values()))[1]) - 1

    def lengths(self, stream: str) -> np.ndarray:
        """Length of every sentence of a stream."""
        return np.diff(self.data[stream][1])

    def get(self, stream: str, i: int) -> np.ndarray:
        """Ids of sentence ``i`` of a stream."""
        tokens, offsets = self.data[stream]
        return tokens[offsets[i]:offsets[i + 1]]


@dataclass
class Corpus:
    """A preprocessed corpus folder: manifest, vocabularies and shards."""

    folder: Path
    manifest: dict
    src_vocab: Vocab
    tgt_vocab: Vocab

    @classmethod
    def open(cls, folder: PathLike) -> "Corpus":
        folder = Path(folder)
        mpath = folder / MANIFEST
        if not mpath.is_file():
            raise NmtkitError(f"{folder}: not a corpus folder (no {MANIFEST}); run 'nmtkit preprocess' first")
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise NmtkitError(f"{mpath}: invalid JSON ({e})") from None
        if manifest.get("format") != FORMAT_VERSION:
            raise NmtkitError(f"{mpath}: unsupported corpus format {manifest.get('format')!r}")
        return cls(folder, manifest, load_vocab(folder / manifest["vocab"]["src"]),
                   load_vocab(folder / manifest["vocab"]["tgt"]))

    def has_split(self, split: str) -> bool:
        return split in self.manifest["splits"]

    def shard_paths(self, split: str) -> list[Path]:
        if not self.has_split(split):
            raise NmtkitError(f"{self.folder}: corpus has no '{split}' split")
        return [self.folder / s["file"] for s in self.manifest["splits"][split]["shards"]]

    def sentences(self, split: str) -> int:
        return self.manifest["splits"][split]["sentences"]

    def reference_path(self, split: str) -> Optional[Path]:
        """Raw target text of a split (for BLEU), if preprocessing kept it."""
        ref = self.manifest["splits"].get(split, {}).get("reference")
        return self.folder / ref if ref else None

    def source_path(self, split: str) -> Optional[Path]:
        """Raw source text of a split, if preprocessing kept it."""
        src = self.manifest["splits"].get(split, {}).get("source")
        return self.folder / src if src else None
