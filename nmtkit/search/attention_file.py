"""The attention file: each sentence's tokens and attention matrices, in HDF5.

Layout: one group per input line, named by its 0-based index (``/sentences/17``), holding
``src_tokens`` and ``tgt_tokens`` (UTF-8 strings; the target ends with ``</s>``), and one
dataset per attention kind under ``attention/``, one row per output token:

- ``source``: ``[len(tgt_tokens), len(src_tokens)]`` (the source includes its ``</s>``);
- ``target``: ``[n, n - 1]`` for n output tokens, row j over the j previous outputs (zeros after);
- ``encoders``: ``[n, K]`` weights over K encoders and, last, the sentinel of multi-source
  models; the dataset's ``labels`` attribute names the columns (e.g. source, image, sentinel).

Models with several inputs (``src`` and ``mt``; ``src`` and ``image``): ``src_tokens`` and ``source`` are those of
the first input; the group ``input_tokens`` holds the tokens (feature-grid cells ``r0c0``, ... for images) of each
further input as a dataset named by its stream (``input_tokens/mt``), and ``attention/source.<stream>``
(``source.mt``) is ``[n, len(input_tokens/<stream>)]``, the attention over that input. Files of one-input models, and
files written before, have no ``input_tokens``.

Any dataset may carry ``labels``, which readers return under ``labels``. The file's
attributes give the number of sentences, the model that wrote it and its inputs (``inputs``, when known). Empty
input lines get an empty group, so indices always equal line numbers - 1.

The file takes a few kilobytes per sentence. HDF5 crashes the process when the disk fills under
it, so the writer stops with one line ("no space left on device") while the disk still has
:data:`RESERVE` bytes free.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import h5py
import numpy as np

from nmtkit.data.text import PathLike, replacement_for
from nmtkit.errors import DiskFull, NmtkitError, writing

STR = h5py.string_dtype("utf-8")


#: Free space a disk must keep while an attention file grows on it (at most a 16th of a small disk): HDF5 crashes
#: the process (a segmentation fault) when a write fails, so the writer stops with "no space left on device"
#: while there is room to close the file.
RESERVE = 64 << 20


class AttentionWriter:
    """Write sentences one by one to a temporary file; it appears under its name only after :meth:`close` (a
    symbolic link written through, a file replaced keeping its permissions). HDF5 needs a file it can seek in: a
    pipe or a device is refused by the command line (``WriteFile(stdout=False)``)."""

    def __init__(self, path: PathLike, **attrs):
        self.path = Path(path)
        with writing(self.path):
            tmp, self.target = replacement_for(self.path)
            self.tmp = Path(tmp)
        try:
            self._check_room()
            self.file = h5py.File(self.tmp, "w")
        except BaseException:
            self.tmp.unlink()
            raise
        self.group = self.file.create_group("sentences")
        for k, v in attrs.items():
            self.file.attrs[k] = v
        self.count = 0

    def _check_room(self) -> None:
        disk = shutil.disk_usage(self.tmp.parent)
        if disk.free < min(RESERVE, disk.total // 16):
            raise DiskFull(self.path)

    def add(self, index: int, src_tokens: Sequence[str], tgt_tokens: Sequence[str],
            attention: dict[str, np.ndarray], labels: Optional[Mapping[str, Sequence[str]]] = None,
            input_tokens: Optional[Mapping[str, Sequence[str]]] = None) -> None:
        """Add sentence ``index``; ``labels`` names the columns of some attention kinds (``encoders``);
        ``input_tokens`` are the tokens of the inputs after the first, by stream."""
        self._check_room()
        g = self.group.create_group(str(index))
        _strings(g, "src_tokens", src_tokens)
        _strings(g, "tgt_tokens", tgt_tokens)
        if input_tokens:
            inputs = g.create_group("input_tokens")
            for stream, tokens in input_tokens.items():
                _strings(inputs, stream, tokens)
        a = g.create_group("attention")
        for name, weights in attention.items():
            d = a.create_dataset(name, data=np.asarray(weights, dtype=np.float32), compression="gzip", compression_opts=1)
            if labels and name in labels:
                d.attrs.create("labels", np.array(list(labels[name]), dtype=object), dtype=STR)
        self.file.flush()  # on the disk now, so that the next check of the room left is true
        self.count = max(self.count, index + 1)

    def close(self) -> None:
        """Finish the file and give it its name."""
        with writing(self.path):
            self.file.attrs["sentences"] = self.count
            self.file.close()
            os.replace(self.tmp, self.target)

    def abort(self) -> None:
        """Give up: the temporary file is removed."""
        try:
            self.file.close()
        except (OSError, RuntimeError):  # the disk may be full: the file goes anyway
            pass
        self.tmp.unlink(missing_ok=True)


class AttentionFile:
    """Read an attention file: ``len(f)`` sentences, ``f[i]`` a dict of tokens, attention arrays and labels."""

    def __init__(self, path: PathLike):
        self.path = Path(path)
        try:
            self.file = h5py.File(self.path, "r")
            self.group = self.file["sentences"]
        except (OSError, KeyError) as e:
            raise NmtkitError(f"{self.path}: not an nmtkit attention file ({e})") from None
        self.attrs = dict(self.file.attrs)

    def __len__(self) -> int:
        return int(self.attrs.get("sentences", len(self.group)))

    def __getitem__(self, index: int) -> dict:
        if not 0 <= index < len(self):
            raise NmtkitError(f"{self.path}: no sentence {index} (the file has {len(self)}, numbered from 0)")
        try:
            g = self.group[str(index)]
            sentence: dict[str, Any] = {"src_tokens": _texts(g["src_tokens"][()]),
                                        "tgt_tokens": _texts(g["tgt_tokens"][()]),
                                        "input_tokens": {k: _texts(v[()]) for k, v in g.get("input_tokens", {}).items()},
                                        "attention": {k: np.asarray(v[()]) for k, v in g["attention"].items()},
                                        "labels": {k: _texts(v.attrs["labels"]) for k, v in g["attention"].items()
                                                   if "labels" in v.attrs}}
        except (KeyError, TypeError, ValueError, OSError) as e:
            raise NmtkitError(f"{self.path}: sentence {index} is incomplete or damaged ({e})") from None
        for kind, weights in sentence["attention"].items():
            columns = len(sentence["src_tokens"]) if kind == "source" else None
            if (weights.ndim != 2 or len(weights) != len(sentence["tgt_tokens"])
                    or columns is not None and weights.shape[1] != columns):
                raise NmtkitError(f"{self.path}: sentence {index}: its {kind!r} attention is {list(weights.shape)}, "
                                  f"not [{len(sentence['tgt_tokens'])} output tokens, "
                                  f"{'positions' if columns is None else columns}]")
            if not np.isfinite(weights).all():
                raise NmtkitError(f"{self.path}: sentence {index}: its {kind!r} attention is not finite")
        return sentence

    @property
    def inputs(self) -> list[str]:
        """The model's input streams, in order, if the writer recorded them (else empty)."""
        return _texts(self.attrs.get("inputs", []))

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> "AttentionFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: what a NUL character of a token is written as (HDF5's strings end at a NUL): U+2400, the symbol for null
NUL = "\u2400"


def _strings(group: h5py.Group, name: str, texts: Sequence[str]) -> None:
    group.create_dataset(name, data=np.array([t.replace("\0", NUL) for t in texts], dtype=object), dtype=STR)


def _texts(values: Iterable) -> list[str]:
    return [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in values]


def open_attention(path: Optional[PathLike], **attrs) -> Optional[AttentionWriter]:
    return AttentionWriter(path, **attrs) if path else None
