"""Captioning data to corpus folder: images to CNN features, captions to a vocabulary, HDF5 shards, manifest.

The corpus has two streams: ``image`` (features, ``[grid, D]`` per example; 196 × 512 for VGG16 at 224 px)
and the target captions. Training pairs every reference caption with its image (the captions of an image
share one copy of its features in the shards); validation and test hold one example per image, with the
first caption as target (for perplexity) and all captions, tab-separated, as the reference (for BLEU), and
the image paths as the input of ``nmtkit caption``. The manifest records how features were made, so
``caption`` makes them alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Optional

import numpy as np
import torch

from nmtkit.data.images import extract_features, image_paths, read_captions, read_image_list
from nmtkit.data.manifest import FORMAT_VERSION, file_record
from nmtkit.data.preprocess import VocabSpec, build_vocabs, check_new_corpus, save_token_stream, write_manifest
from nmtkit.data.shards import ShardWriter
from nmtkit.data.streams import FEATURES, TARGET
from nmtkit.data.text import PathLike, atomic_folder, atomic_output
from nmtkit.data.vgg import FEATURE_SIZE, VGG16Features
from nmtkit.errors import NmtkitError
from nmtkit.progress import log, warn

IMAGE = "image"
REFERENCE_SEPARATOR = "\t"


@dataclass
class ImageSpec:
    """How images become features: VGG16 (ImageNet ``weights`` file, or random weights from ``seed``) on
    ``size`` × ``size`` pixels, stored as ``dtype``."""

    size: int = 224
    weights: Optional[str] = None
    seed: int = 1
    dtype: str = "float16"
    batch_size: int = 16
    skip_bad: bool = False
    device: str = "cpu"

    def record(self) -> dict:
        """What the manifest and checkpoints keep, to make the same features again."""
        out = {"cnn": "vgg16", "size": self.size, "seed": self.seed, "dtype": self.dtype, "weights": self.weights}
        if self.weights:
            out["weights_sha256"] = file_record(self.weights)["sha256"]
        return out

    @classmethod
    def from_record(cls, record: Mapping, weights: Optional[str] = None) -> "ImageSpec":
        """The spec a manifest recorded (``weights`` overrides the file's path, which must hold the same bytes)."""
        path = weights or record.get("weights")
        if path and not Path(path).is_file():
            raise NmtkitError(f"{path}: the CNN weights the features were made with are not there; give them with "
                              "--cnn-weights", exit_code=2)
        if path and record.get("weights_sha256") and file_record(path)["sha256"] != record["weights_sha256"]:
            raise NmtkitError(f"--cnn-weights {path}: not the weights the features were made with "
                              f"(SHA-256 {record['weights_sha256'][:12]}...)", exit_code=2)
        return cls(size=int(record["size"]), weights=path, seed=int(record["seed"]), dtype=str(record["dtype"]))

    def network(self) -> VGG16Features:
        """The feature extractor, in eval mode, on ``device``."""
        torch.manual_seed(self.seed)
        cnn = VGG16Features()  # random weights drawn on the CPU: the same on every machine
        if self.weights:
            cnn.load_weights(Path(self.weights))
        return cnn.eval().to(self.device)


def load_features(path: PathLike, option: str, count: Optional[int] = None) -> np.ndarray:
    """Precomputed features ``[images, grid, D]`` from ``.npy`` (memory-mapped) or HDF5 (dataset ``features``),
    ``count`` images if given; errors name ``option`` (e.g. ``--features test=FILE``)."""
    path = Path(path)
    try:
        if path.suffix in (".h5", ".hdf5"):
            import h5py
            with h5py.File(path, "r") as f:
                array = f["features"][()]
        else:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, KeyError, ValueError) as e:
        raise NmtkitError(f"{option}: cannot read ({str(e).splitlines()[0]})", exit_code=2) from None
    if array.ndim != 3 or (count is not None and len(array) != count):
        wanted = f"{count} images" if count is not None else "images"
        raise NmtkitError(f"{option}: expected an array [{wanted}, grid, D], got shape {tuple(array.shape)}",
                          exit_code=2)
    return array


def preprocess_captions(out: PathLike, captions: PathLike, splits: Mapping[str, PathLike], lang: str,
                        images: Optional[PathLike] = None, vocab: Optional[VocabSpec] = None,
                        spec: Optional[ImageSpec] = None, features: Optional[Mapping[str, PathLike]] = None,
                        max_len: Optional[int] = 50, shard_size: int = 10_000, overwrite: bool = False) -> Path:
    """Build a captioning corpus folder from a caption file and per-split image lists (``splits``: ``train``,
    ``valid`` and optionally ``test``), with images under ``images`` (or features given per split)."""
    out, spec, features = Path(out), spec or ImageSpec(), dict(features or {})
    vocab = vocab or VocabSpec(kind="word", size=10_000)
    check_new_corpus(out, overwrite)
    unknown = sorted(set(features) - set(splits))
    if unknown:
        raise NmtkitError(f"--features {unknown[0]}=...: no such split (splits: {', '.join(splits)})", exit_code=2)
    by_image = read_captions(captions)
    names = {split: read_image_list(path) for split, path in splits.items()}
    for split, listed in names.items():
        missing = [n for n in listed if n not in by_image]
        if missing:
            raise NmtkitError(f"{splits[split]}: image {missing[0]!r} has no caption in {captions} "
                              f"({len(missing)} such image(s))")
    with atomic_folder(out, "corpus folder") as tmp:
        train_text = tmp / f"train.{lang}"
        with atomic_output(train_text, "w") as f:
            f.writelines(c.replace("\n", " ") + "\n" for n in names["train"] for c in by_image[n])
        vocabs = build_vocabs(vocab, {TARGET: train_text})
        tgt_vocab = vocabs[TARGET]
        cnn = None if set(features) >= set(splits) else spec.network()
        streams = {IMAGE: {"kind": FEATURES, "lang": "", "size": FEATURE_SIZE},
                   TARGET: save_token_stream(tmp, TARGET, tgt_vocab, lang)}
        manifest: dict = {"format": FORMAT_VERSION, "streams": streams, "splits": {},
                          "options": {"max_len": max_len, "shard_size": shard_size, "vocab": f"{vocab.kind}:{vocab.size}",
                                      "images": spec.record() if cnn is not None else None,
                                      "features": {k: str(v) for k, v in features.items()}}}
        for split, listed in names.items():
            paths = image_paths(listed, images)
            if split in features:
                array = load_features(features[split], f"--features {split}={features[split]}", len(listed))
                found: Iterator[Optional[np.ndarray]] = (np.asarray(a) for a in array)
            else:
                assert cnn is not None
                found = extract_features(cnn, paths, spec.size, spec.batch_size, spec.skip_bad, spec.dtype,
                                         f"{split} images")
            info = _write_split(tmp, split, listed, paths, found, by_image, tgt_vocab, lang, max_len, shard_size)
            streams[IMAGE]["size"] = info.pop("feature_size")
            manifest["splits"][split] = info
        write_manifest(tmp, manifest)
    return out


def _write_split(tmp: Path, split: str, names: list[str], paths: list[Path], found: Iterator[Optional[np.ndarray]],
                 by_image: Mapping[str, list[str]], tgt_vocab, lang: str, max_len: Optional[int],
                 shard_size: int) -> dict:
    """One split's shards (and, held out, its references and image list)."""
    writer = ShardWriter(tmp, split, [IMAGE, TARGET], shard_size)
    training = split == "train"
    counts = {"bad_images": 0, "too_long": 0, "empty": 0}
    references, inputs, size = [], [], FEATURE_SIZE
    for name, path, feats in zip(names, paths, found):
        if feats is None:
            counts["bad_images"] += 1
            continue
        size = feats.shape[-1]
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
        + (f"; dropped {counts['too_long']} captions longer than {max_len} tokens and {counts['empty']} empty ones"
           if training else ""))
    info: dict = {"shards": shards, "sentences": kept, "lines": len(names), "feature_size": int(size),
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
