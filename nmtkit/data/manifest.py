"""The corpus manifest (``manifest.json``): its format, its schema, and the record of every file.

Format 2 lists the streams (kind, language, vocabulary file, size), the splits (shards with their
example count and per-stream row count; held-out raw text) and, since nmtkit 0.2, ``files``: the size
and SHA-256 of every file of the folder, so that damage is found before training on it
(:mod:`nmtkit.data.verify`). Format 1 manifests (``src``/``tgt`` only) are read as format 2.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Optional

from nmtkit.data.streams import FEATURES, TARGET, TOKENS
from nmtkit.data.text import PathLike
from nmtkit.errors import NmtkitError

MANIFEST = "manifest.json"
FORMAT_VERSION = 2
READABLE_FORMATS = (1, 2)
HELD_OUT = ("valid", "test")


def file_record(path: PathLike, on_bytes: Optional[Callable[[int], None]] = None) -> dict:
    """A file's size and SHA-256, read in 1 MiB blocks (``on_bytes`` is told each block's size)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
            if on_bytes:
                on_bytes(len(block))
    return {"bytes": Path(path).stat().st_size, "sha256": digest.hexdigest()}


def upgrade_manifest(manifest: dict) -> dict:
    """A format 1 manifest (``src``/``tgt`` text only) in format 2's terms: a ``streams`` table."""
    if manifest.get("format") != 1:
        return manifest
    vocab = manifest["vocab"]
    streams = {side: {"kind": TOKENS, "lang": manifest[f"{side}_lang"], "vocab": vocab[side],
                      "size": vocab[f"{side}_size"]} for side in ("src", TARGET)}
    return {**manifest, "format": 2, "streams": streams}


class _Schema:
    """Checks of a manifest's structure; each failure is one line naming the file and the key."""

    def __init__(self, path: Path):
        self.path = path

    def need(self, parent: Any, key: str, kind: type, where: str) -> Any:
        name = f"{where}.{key}" if where else key
        if not isinstance(parent, dict):
            raise NmtkitError(f"{self.path}: '{where or 'the manifest'}' should be a mapping, not {parent!r}")
        if key not in parent:
            raise NmtkitError(f"{self.path}: '{name}' is missing")
        value = parent[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise NmtkitError(f"{self.path}: '{name}' should be {kind.__name__}, not {value!r}")
        if isinstance(value, int) and value < 0:
            raise NmtkitError(f"{self.path}: '{name}' should not be negative, got {value}")
        return value

    def file_name(self, name: str, where: str) -> None:
        """A file of the corpus folder itself: no folders, no way out of it."""
        if Path(name).name != name or name in (".", ".."):
            raise NmtkitError(f"{self.path}: '{where}' should name a file of the corpus folder, not {name!r}")


def read_manifest(folder: Path) -> dict:
    """The manifest of a corpus folder, in format 2, with its structure checked (not yet the files it names)."""
    path = folder / MANIFEST
    if not path.is_file():
        raise NmtkitError(f"{folder}: not a corpus folder (no {MANIFEST}); run 'nmtkit preprocess' first")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise NmtkitError(f"{path}: invalid JSON ({e})") from None
    schema = _Schema(path)
    if not isinstance(manifest, dict) or manifest.get("format") not in READABLE_FORMATS:
        found = manifest.get("format") if isinstance(manifest, dict) else manifest
        raise NmtkitError(f"{path}: unsupported corpus format {found!r}")
    if manifest["format"] == 1:
        vocab = schema.need(manifest, "vocab", dict, "")
        for side in ("src", TARGET):
            schema.need(manifest, f"{side}_lang", str, "")
            schema.need(vocab, side, str, "vocab")
            schema.need(vocab, f"{side}_size", int, "vocab")
    manifest = upgrade_manifest(manifest)
    streams = schema.need(manifest, "streams", dict, "")
    schema.need(streams, TARGET, dict, "streams")
    for name, stream in streams.items():
        where = f"streams.{name}"
        kind = schema.need(stream, "kind", str, where)
        if kind not in (TOKENS, FEATURES):
            raise NmtkitError(f"{path}: '{where}.kind' should be {TOKENS} or {FEATURES}, not {kind!r}")
        if schema.need(stream, "size", int, where) < 1:
            raise NmtkitError(f"{path}: '{where}.size' should be at least 1")
        if kind == TOKENS:
            schema.file_name(schema.need(stream, "vocab", str, where), f"{where}.vocab")
    splits = schema.need(manifest, "splits", dict, "")
    for split in ("train", "valid"):
        schema.need(splits, split, dict, "splits")
    for split, info in splits.items():
        where = f"splits.{split}"
        shards = schema.need(info, "shards", list, where)
        if not shards:
            raise NmtkitError(f"{path}: '{where}.shards' is empty")
        for i, shard in enumerate(shards):
            schema.file_name(schema.need(shard, "file", str, f"{where}.shards[{i}]"), f"{where}.shards[{i}].file")
            schema.need(shard, "sentences", int, f"{where}.shards[{i}]")
            if "rows" in shard:
                for stream in schema.need(shard, "rows", dict, f"{where}.shards[{i}]"):
                    schema.need(shard["rows"], stream, int, f"{where}.shards[{i}].rows")
        if "inputs" in info:
            for stream in schema.need(info, "inputs", dict, where):
                schema.file_name(schema.need(info["inputs"], stream, str, f"{where}.inputs"), f"{where}.inputs.{stream}")
        if schema.need(info, "sentences", int, where) != sum(s["sentences"] for s in shards):
            raise NmtkitError(f"{path}: '{where}.sentences' is not the sum of its shards' sentences")
        if split in HELD_OUT:
            schema.file_name(schema.need(info, "reference", str, where), f"{where}.reference")
    if "files" in manifest:
        for name, record in schema.need(manifest, "files", dict, "").items():
            schema.need(record, "bytes", int, f"files.{name}")
            schema.need(record, "sha256", str, f"files.{name}")
    return manifest


def named_files(manifest: dict) -> list[str]:
    """Every file a manifest names: vocabularies, shards, held-out text."""
    names = [s["vocab"] for s in manifest["streams"].values() if s.get("vocab")]
    for info in manifest["splits"].values():
        names += [s["file"] for s in info["shards"]]
        names += ([info["reference"]] if info.get("reference") else []) + list(info.get("inputs", {}).values())
    return list(dict.fromkeys(names))
