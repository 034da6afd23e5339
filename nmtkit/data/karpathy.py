"""Karpathy's splits of Flickr8k/30k and COCO (``dataset_flickr30k.json`` of his ``caption_datasets.zip``) as the
files ``preprocess --captions`` reads: ``captions.tsv`` (image<TAB>caption, his lowercased tokens joined by
spaces) and ``train.txt`` (``train`` and ``restval``), ``dev.txt`` (``val``), ``test.txt``: image names a line.

Usage: python -m nmtkit.data.karpathy dataset_flickr30k.json OUT_DIR
"""
from __future__ import annotations

import json
import sys

from nmtkit.data.folders import atomic_folder
from nmtkit.data.text import PathLike, check_readable
from nmtkit.errors import NmtkitError

SPLITS = {"train": "train", "restval": "train", "val": "dev", "test": "test"}


def _entry(where: str, image: object) -> tuple[str, str, list[str]]:
    """An entry of ``images``: its file name, its split (ours) and its captions; else a one-line error naming it."""
    if not isinstance(image, dict):
        raise NmtkitError(f"{where}: expected an object with filename, split and sentences, not {type(image).__name__}")
    name, split, sentences = image.get("filename"), image.get("split"), image.get("sentences")
    if not isinstance(name, str) or not name:
        raise NmtkitError(f"{where}: 'filename' should be a file name, not {name!r}")
    if split not in SPLITS:
        raise NmtkitError(f"{where}: 'split' should be one of {', '.join(SPLITS)}, not {split!r}")
    if not isinstance(sentences, list):
        raise NmtkitError(f"{where}: 'sentences' should be a list, not {type(sentences).__name__}")
    captions = []
    for j, sentence in enumerate(sentences):
        tokens = sentence.get("tokens") if isinstance(sentence, dict) else None
        raw = sentence.get("raw") if isinstance(sentence, dict) else None
        if isinstance(tokens, list) and tokens and all(isinstance(t, str) for t in tokens):
            captions.append(" ".join(tokens))
        elif isinstance(raw, str):
            captions.append(raw.strip())
        else:
            raise NmtkitError(f"{where}.sentences[{j}]: expected 'tokens' (a list of words) or 'raw' (a string)")
    return name, SPLITS[split], captions


def karpathy_split(path: PathLike, out: PathLike) -> dict[str, int]:
    """Write the caption file and the split lists of a Karpathy split file as the new folder ``out`` (replacing only
    such a folder written before); images per split."""
    try:
        data = json.loads(check_readable(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise NmtkitError(f"{path}: not a Karpathy split file (invalid JSON: {e})") from None
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list):
        raise NmtkitError(f"{path}: not a Karpathy split file (a JSON object whose 'images' is a list)")
    lists: dict[str, list[str]] = {name: [] for name in dict.fromkeys(SPLITS.values())}
    lines = []
    for k, image in enumerate(images):
        name, split, captions = _entry(f"{path}: images[{k}]", image)
        lists[split].append(name)
        lines += [f"{name}\t{' '.join(c.split())}" for c in captions if c.strip()]
    with atomic_folder(out, "caption list folder", replace=True, option="OUT_DIR", replace_option=None,
                       inputs=[path]) as tmp:
        (tmp / "captions.tsv").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        for split, names in lists.items():
            (tmp / f"{split}.txt").write_text("".join(name + "\n" for name in names), encoding="utf-8")
    return {split: len(names) for split, names in lists.items()}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    try:
        counts = karpathy_split(sys.argv[1], sys.argv[2])
    except NmtkitError as e:
        sys.exit(f"error: {e}")
    print(", ".join(f"{split} {n:,} images" for split, n in counts.items()), file=sys.stderr)
