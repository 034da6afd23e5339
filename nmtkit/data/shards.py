"""HDF5 shards and the corpus manifest.

A corpus is a folder holding ``manifest.json``, the vocabulary files and, per split,
shards ``train.000.h5``, ``train.001.h5``, ... Each shard stores each named stream (``src``,
``tgt``, ``mt``, ``image``, ...) as one group: a text stream as a flat int32 ``tokens`` dataset,
a feature stream as a ``features`` dataset ``[rows, D]`` (float16 or float32), each with an int64
``offsets`` dataset of length n+1, so example i of a stream is ``data[offsets[i]:offsets[i+1]]``.
The group's ``kind`` attribute says which (shards written before it existed hold tokens). Examples that
share an item (the captions of one image share its features) store it once: the group then has an
``index`` dataset, one entry per example, and example i is item ``index[i]``.

The manifest (:mod:`nmtkit.data.manifest`) lists the streams, the shards of each split with their
example and row counts, and the size and checksum of every file.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

import h5py
import numpy as np

from nmtkit.data.manifest import read_manifest
from nmtkit.data.output_form import OutputForm
from nmtkit.data.streams import FEATURES, TARGET, TOKENS, CorpusMeta, StreamInfo
from nmtkit.data.text import PathLike, atomic_output, read_lines, reference_streams
from nmtkit.data.vocab import Vocab, load_vocab
from nmtkit.errors import NmtkitError


class ShardWriter:
    """Collects sentences of one split and writes a shard each time ``shard_size`` are in hand."""

    def __init__(self, folder: PathLike, split: str, streams: Sequence[str], shard_size: int = 100_000):
        self.folder, self.split, self.streams, self.shard_size = Path(folder), split, list(streams), shard_size
        self.shards: list[dict] = []
        self._reset()

    def _reset(self) -> None:
        self._buf: dict[str, list[np.ndarray]] = {s: [] for s in self.streams}  # each stream's distinct items
        self._index: dict[str, list[int]] = {s: [] for s in self.streams}  # each example's item
        self._last: dict[str, object] = {}

    def add(self, **items: Union[Sequence[int], np.ndarray]) -> None:
        """Add one example: token ids (a sequence, possibly empty), or features ``[n, D]`` (2-D), per stream.
        An item that is the very object the previous example gave for that stream is stored once, shared."""
        for s in self.streams:
            if items[s] is not self._last.get(s):
                item = np.asarray(items[s])
                self._buf[s].append(item if item.ndim == 2 else item.astype(np.int32))
                self._last[s] = items[s]
            self._index[s].append(len(self._buf[s]) - 1)
        if len(self._index[self.streams[0]]) >= self.shard_size:
            self.flush()

    def flush(self) -> None:
        """Write the buffered examples as the next shard (nothing if the buffer is empty)."""
        n = len(self._index[self.streams[0]])
        if n == 0:
            return
        name = f"{self.split}.{len(self.shards):03d}.h5"
        image = io.BytesIO()  # HDF5 writes to memory: on a full disk it would crash the process, Python only fails
        with h5py.File(image, "w") as f:
            for s in self.streams:
                seqs = self._buf[s]
                offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
                np.cumsum([len(x) for x in seqs], out=offsets[1:])
                g = f.create_group(s)
                kind = FEATURES if seqs[0].ndim == 2 else TOKENS
                g.attrs["kind"] = kind
                empty = np.zeros((0,) + seqs[0].shape[1:], seqs[0].dtype)
                g.create_dataset(kind, data=np.concatenate(seqs) if offsets[-1] else empty)
                g.create_dataset("offsets", data=offsets)
                if len(seqs) < n:
                    g.create_dataset("index", data=np.asarray(self._index[s], dtype=np.int64))
        with atomic_output(self.folder / name, "wb") as out:
            out.write(image.getbuffer())
        self.shards.append({"file": name, "sentences": n,
                            "rows": {s: int(sum(len(x) for x in self._buf[s])) for s in self.streams}})
        self._reset()

    def close(self) -> list[dict]:
        """Flush the remainder and return the shard list for the manifest."""
        self.flush()
        return self.shards


class Shard:
    """One shard loaded in memory: per stream its kind, a flat data array and offsets."""

    def __init__(self, path: PathLike):
        self.path = Path(path)
        try:
            with h5py.File(self.path, "r") as f:
                self.kinds = {s: str(f[s].attrs.get("kind", TOKENS)) for s in f.keys()}
                self.data = {s: (f[s][k][()], f[s]["offsets"][()]) for s, k in self.kinds.items()}
                self.index = {s: f[s]["index"][()] for s in self.kinds if "index" in f[s]}
        except (OSError, KeyError) as e:
            raise NmtkitError(f"{self.path}: cannot read shard ({e})") from None

    @property
    def streams(self) -> list[str]:
        """The stream names, in the file's order."""
        return list(self.data)

    def kind(self, stream: str) -> str:
        """``tokens`` or ``features``."""
        return self.kinds[stream]

    def examples(self, stream: str) -> int:
        """How many examples a stream has (all streams of a sound shard have as many)."""
        return len(self.index[stream]) if stream in self.index else len(self.data[stream][1]) - 1

    def __len__(self) -> int:
        return self.examples(self.streams[0])

    def lengths(self, stream: str) -> np.ndarray:
        """Length of every sentence of a stream."""
        lengths = np.diff(self.data[stream][1])
        return lengths[self.index[stream]] if stream in self.index else lengths

    def get(self, stream: str, i: int) -> np.ndarray:
        """Example ``i`` of a stream: its ids, or its feature rows ``[n, D]``."""
        tokens, offsets = self.data[stream]
        j = self.index[stream][i] if stream in self.index else i
        return tokens[offsets[j]:offsets[j + 1]]


@dataclass
class Corpus:
    """A preprocessed corpus folder: manifest, the vocabulary of every text stream, shards."""

    folder: Path
    manifest: dict
    vocabs: dict[str, Vocab]

    @classmethod
    def open(cls, folder: PathLike) -> "Corpus":
        """Read the manifest (structure checked) and the vocabularies; :func:`nmtkit.data.verify.verify_corpus`
        checks the rest."""
        folder = Path(folder)
        manifest = read_manifest(folder)
        vocabs = {name: load_vocab(folder / s["vocab"]) for name, s in manifest["streams"].items() if s.get("vocab")}
        return cls(folder, manifest, vocabs)

    @property
    def meta(self) -> CorpusMeta:
        return CorpusMeta({name: StreamInfo(s["kind"], int(s["size"]), s.get("lang", ""))
                           for name, s in self.manifest["streams"].items()})

    @property
    def output_form(self) -> OutputForm:
        """What the corpus' targets are (text, or edit operations on an input)."""
        return OutputForm.of(self.manifest.get("options", {}))

    @property
    def tgt_vocab(self) -> Vocab:
        return self.vocabs[TARGET]

    def has_split(self, split: str) -> bool:
        return split in self.manifest["splits"]

    def shard_paths(self, split: str) -> list[Path]:
        if not self.has_split(split):
            raise NmtkitError(f"{self.folder}: corpus has no '{split}' split")
        return [self.folder / s["file"] for s in self.manifest["splits"][split]["shards"]]

    def sentences(self, split: str) -> int:
        return self.manifest["splits"][split]["sentences"]

    def longest(self, split: str) -> dict[str, int]:
        """The most tokens of one sentence of each text stream of a split, from the shards' offsets alone."""
        found: dict[str, int] = {}
        for path in self.shard_paths(split):
            with h5py.File(path, "r") as f:
                for stream in f.keys():
                    if str(f[stream].attrs.get("kind", TOKENS)) == TOKENS:
                        offsets = f[stream]["offsets"][()]
                        found[stream] = max(found.get(stream, 0), int(np.diff(offsets).max(initial=0)))
        return found

    def reference_path(self, split: str) -> Optional[Path]:
        """Raw target text of a split (for BLEU), if preprocessing kept it."""
        ref = self.manifest["splits"].get(split, {}).get("reference")
        return self.folder / ref if ref else None

    def references(self, split: str, n: Optional[int] = None) -> Optional[list[list[Optional[str]]]]:
        """The reference streams of a split's first ``n`` examples, for BLEU: one, or several where each line holds
        several references (captions) split by the manifest's ``reference_separator``; None where a line has
        fewer. None if preprocessing kept no reference."""
        path = self.reference_path(split)
        if path is None:
            return None
        lines = read_lines(path)[:n]
        separator = self.manifest["splits"][split].get("reference_separator")
        return reference_streams(lines, separator) if separator else [list[Optional[str]](lines)]
