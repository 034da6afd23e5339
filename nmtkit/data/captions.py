"""Captioning data to corpus folder: images to CNN features, captions to a vocabulary, HDF5 shards, manifest.

The corpus has two streams: ``image`` (features, ``[grid, D]`` per example; 196 × 512 for VGG16 at 224 px)
and the target captions. Training pairs every reference caption with its image (the captions of an image
share one copy of its features in the shards); validation and test hold one example per image, with the
first caption as target (for perplexity) and all captions, tab-separated, as the reference (for BLEU), and
the image paths as the input of ``nmtkit caption``. The manifest records how features were made, so
``caption`` makes them alike.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Mapping, Optional

import numpy as np

from nmtkit.data.folders import CORPUS, check_output_folder
from nmtkit.data.images import (
    IMAGE,
    ImageSpec,
    SplitFeatures,
    image_paths,
    load_features,
    read_captions,
    read_image_list,
)
from nmtkit.data.manifest import FORMAT_VERSION
from nmtkit.data.preprocess import VocabSpec, build_vocabs, corpus_folder, save_token_stream, write_manifest
from nmtkit.data.shards import ShardWriter
from nmtkit.data.streams import TARGET
from nmtkit.data.text import PathLike, atomic_output
from nmtkit.errors import NmtkitError
from nmtkit.progress import log, warn

__all__ = ["ImageSpec", "load_features", "preprocess_captions"]  # the first two for those importing them from here
REFERENCE_SEPARATOR = "\t"


def preprocess_captions(out: PathLike, captions: PathLike, splits: Mapping[str, PathLike], lang: str,
                        images: Optional[PathLike] = None, vocab: Optional[VocabSpec] = None,
                        spec: Optional[ImageSpec] = None, features: Optional[Mapping[str, PathLike]] = None,
                        max_len: Optional[int] = 50, shard_size: int = 10_000, overwrite: bool = False) -> Path:
    """Build a captioning corpus folder from a caption file and per-split image lists (``splits``: ``train``,
    ``valid`` and optionally ``test``), with images under ``images`` (or features given per split)."""
    out, spec = Path(out), spec or ImageSpec()
    vocab = vocab or VocabSpec(kind="word", size=10_000)
    check_output_folder(out, CORPUS, overwrite, "-o", "--overwrite")
    by_image = read_captions(captions)
    names = {split: read_image_list(path) for split, path in splits.items()}
    for split, listed in names.items():
        missing = [n for n in listed if n not in by_image]
        if missing:
            raise NmtkitError(f"{splits[split]}: image {missing[0]!r} has no caption in {captions} "
                              f"({len(missing)} such image(s))")
    made = SplitFeatures(spec, features or {}, {split: len(listed) for split, listed in names.items()})
    inputs = [captions, *splits.values(), images, vocab.tgt_file, *(features or {}).values(), spec.weights]
    with corpus_folder(out, overwrite, [f for f in inputs if f]) as tmp:
        train_text = tmp / f"train.{lang}"
        with atomic_output(train_text, "w") as f:
            f.writelines(c.replace("\n", " ") + "\n" for n in names["train"] for c in by_image[n])
        vocabs = build_vocabs(vocab, {TARGET: train_text})
        tgt_vocab = vocabs[TARGET]
        streams = {IMAGE: made.stream(), TARGET: save_token_stream(tmp, TARGET, tgt_vocab, lang)}
        manifest: dict = {"format": FORMAT_VERSION, "streams": streams, "splits": {},
                          "options": {"max_len": max_len, "shard_size": shard_size, "vocab": f"{vocab.kind}:{vocab.size}",
                                      **made.record()}}
        for split, listed in names.items():
            paths = image_paths(listed, images)
            found = made.of(split, paths, spec.skip_bad)
            manifest["splits"][split] = _write_split(tmp, split, listed, paths, found, by_image, tgt_vocab, lang,
                                                     max_len, shard_size)
        write_manifest(tmp, manifest)
    return out


def _write_split(tmp: Path, split: str, names: list[str], paths: list[Path], found: Iterator[Optional[np.ndarray]],
                 by_image: Mapping[str, list[str]], tgt_vocab, lang: str, max_len: Optional[int],
                 shard_size: int) -> dict:
    """One split's shards (and, held out, its references and image list)."""
    writer = ShardWriter(tmp, split, [IMAGE, TARGET], shard_size)
    training = split == "train"
    counts = {"bad_images": 0, "too_long": 0, "empty": 0}
    references, inputs = [], []
    for name, path, feats in zip(names, paths, found):
        if feats is None:
            counts["bad_images"] += 1
            continue
        captions = by_image[name]
        if training:
            for caption in captions:
                ids = tgt_vocab.encode(caption)
                if not ids:
                    counts["empty"] += 1
                elif max_len and len(ids) > max_len:
                    counts["too_long"] += 1
                else:
                    writer.add(image=feats, tgt=ids)  # the same array: stored once per shard
        else:
            writer.add(image=feats, tgt=tgt_vocab.encode(captions[0]))
            references.append(REFERENCE_SEPARATOR.join(c.replace(REFERENCE_SEPARATOR, " ") for c in captions))
            inputs.append(str(path.resolve()))
    shards = writer.close()
    kept = sum(s["sentences"] for s in shards)
    if kept == 0:
        raise NmtkitError(f"{split}: no example left (bad images {counts['bad_images']}, captions over {max_len} "
                          f"tokens {counts['too_long']})")
    if counts["bad_images"]:
        warn(f"{split}: skipped {counts['bad_images']} unreadable image(s) (--skip-bad-images)")
    log(f"{split}: {kept} examples in {len(shards)} shard(s)"
        + (f"; dropped {counts['too_long']} captions longer than {max_len} tokens"
           + (f" and {counts['empty']} of no token" if counts["empty"] else "") if training else ""))
    info: dict = {"shards": shards, "sentences": kept, "lines": len(names),
                  "skipped_images": counts["bad_images"]}
    if training:
        info["dropped"] = {"too_long": counts["too_long"], "empty": counts["empty"]}
    else:
        for file, lines in ((f"{split}.{lang}", references), (f"{split}.images", inputs)):
            with atomic_output(tmp / file, "w") as f:
                f.writelines(line + "\n" for line in lines)
        info.update(reference=f"{split}.{lang}", reference_separator=REFERENCE_SEPARATOR,
                    inputs={IMAGE: f"{split}.images"})
    return info
