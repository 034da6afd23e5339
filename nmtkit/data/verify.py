"""Whole-corpus verification, before the first update: nothing is trained on a damaged corpus.

Checks, in order of cost: every file the manifest names is present with the recorded size; the
SHA-256 of each (corpora written by nmtkit 0.2 or later record them); the vocabularies have the
recorded sizes; every shard holds the manifest's streams with their kinds, offsets that start at 0,
never decrease and end at the data's length, the recorded example and row counts, token ids within
the vocabulary and feature rows of the stream's width; a held-out split's raw text (the reference for BLEU, the
inputs) has a line per example. The first problem is one line naming the file.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmtkit.data.manifest import MANIFEST, file_record, named_files
from nmtkit.data.shards import Corpus, Shard
from nmtkit.data.streams import TOKENS
from nmtkit.data.text import count_lines
from nmtkit.errors import NmtkitError
from nmtkit.progress import progress


@dataclass
class Verified:
    """What :func:`verify_corpus` checked."""

    files: int
    checksums: bool  # False for corpora whose manifest records none (written before nmtkit 0.2)
    examples: dict[str, int]  # per split
    bytes: int


def verify_corpus(corpus: Corpus, checksums: bool = True) -> Verified:
    """Check a corpus folder against its manifest; raise :class:`NmtkitError` naming the first damaged file.
    ``checksums=False`` skips hashing (the other processes of a distributed run: the first one hashes)."""
    folder, manifest = corpus.folder, corpus.manifest
    names = named_files(manifest)
    records = manifest.get("files")
    for name in names:
        path = folder / name
        if not path.is_file():
            raise NmtkitError(f"{path}: missing (the corpus' {MANIFEST} names it); run 'nmtkit preprocess' again")
        if records is not None:
            if name not in records:
                raise NmtkitError(f"{folder / MANIFEST}: no size and checksum recorded for {name}")
            size = path.stat().st_size
            if size != records[name]["bytes"]:
                raise NmtkitError(f"{path}: {size:,} bytes, but the manifest recorded {records[name]['bytes']:,} "
                                  "(changed or cut short since preprocessing)")
    total = sum((folder / n).stat().st_size for n in names)
    if records is not None and checksums:
        with progress() as bar:
            task = bar.add_task("verifying checksums", total=total, info="")
            for name in names:
                if file_record(folder / name, lambda k: bar.advance(task, k))["sha256"] != records[name]["sha256"]:
                    raise NmtkitError(f"{folder / name}: its SHA-256 differs from the one the manifest recorded "
                                      "(changed since preprocessing)")
    for stream, info in manifest["streams"].items():
        vocab = corpus.vocabs.get(stream)
        if vocab is not None and len(vocab) != info["size"]:
            raise NmtkitError(f"{folder / info['vocab']}: {len(vocab):,} entries, but the manifest says "
                              f"{info['size']:,} for stream '{stream}'")
    examples, listed = {}, set()
    for split, info in manifest["splits"].items():
        for entry in info["shards"]:
            if entry["file"] in listed:
                raise NmtkitError(f"{folder / MANIFEST}: lists the shard {entry['file']} twice (its examples would "
                                  "count twice)")
            listed.add(entry["file"])
            _check_shard(Shard(folder / entry["file"]), entry, manifest["streams"])
        for name in ([info["reference"]] if info.get("reference") else []) + list(info.get("inputs", {}).values()):
            lines = count_lines(folder / name)  # (validation pairs line i with example i: sacrebleu would drop extras)
            if lines != info["sentences"]:
                raise NmtkitError(f"{folder / name}: {lines:,} lines, but the {split} split holds {info['sentences']:,} "
                                  "examples (changed since preprocessing)")
        examples[split] = info["sentences"]
    return Verified(len(names), records is not None and checksums, examples, total)


def _check_shard(shard: Shard, entry: dict, streams: dict) -> None:
    """One shard against its manifest entry and the streams table."""
    where = shard.path
    if set(shard.streams) != set(streams):
        raise NmtkitError(f"{where}: holds streams {', '.join(sorted(shard.streams))}, but the corpus has "
                          f"{', '.join(sorted(streams))}")
    for name, info in streams.items():
        data, offsets = shard.data[name]
        if shard.kind(name) != info["kind"]:
            raise NmtkitError(f"{where}: stream '{name}' holds {shard.kind(name)}, but the manifest says {info['kind']}")
        if shard.examples(name) != entry["sentences"]:
            raise NmtkitError(f"{where}: stream '{name}' has {shard.examples(name):,} examples, but the manifest says "
                              f"{entry['sentences']:,}")
        index = shard.index.get(name)
        if index is not None and len(index) and (index.min() < 0 or index.max() >= len(offsets) - 1):
            raise NmtkitError(f"{where}: stream '{name}': an example's item index lies outside its "
                              f"{len(offsets) - 1:,} items (damaged index)")
        steps = np.diff(offsets)
        if offsets[0] != 0 or (steps < 0).any() or offsets[-1] != len(data):
            bad = "the first offset is not 0" if offsets[0] != 0 else (
                f"offsets decrease at example {int(np.argmax(steps < 0))}" if (steps < 0).any() else
                f"the offsets end at {int(offsets[-1]):,} but the data has {len(data):,} rows")
            raise NmtkitError(f"{where}: stream '{name}': {bad} (damaged offsets)")
        rows = entry.get("rows", {}).get(name)
        if rows is not None and rows != len(data):
            raise NmtkitError(f"{where}: stream '{name}' has {len(data):,} rows, but the manifest says {rows:,}")
        if info["kind"] == TOKENS:
            outside = (data < 0) | (data >= info["size"])
            if outside.any():
                raise NmtkitError(f"{where}: stream '{name}' holds token id {int(data[outside][0])} outside its "
                                  f"vocabulary of {info['size']:,} (ids 0..{info['size'] - 1})")
        elif data.ndim != 2 or data.shape[1] != info["size"]:
            raise NmtkitError(f"{where}: stream '{name}' has feature rows of shape {tuple(data.shape[1:])}, but the "
                              f"manifest says {info['size']}")
