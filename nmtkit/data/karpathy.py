"""Karpathy's splits of Flickr8k/30k and COCO (``dataset_flickr30k.json`` of his ``caption_datasets.zip``) as the
files ``preprocess --captions`` reads: ``captions.tsv`` (image<TAB>caption, his lowercased tokens joined by
spaces) and ``train.txt`` (``train`` and ``restval``), ``dev.txt`` (``val``), ``test.txt``: image names a line.

Usage: python -m nmtkit.data.karpathy dataset_flickr30k.json OUT_DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from nmtkit.data.text import PathLike, atomic_output, check_readable
from nmtkit.errors import NmtkitError

SPLITS = {"train": "train", "restval": "train", "val": "dev", "test": "test"}


def karpathy_split(path: PathLike, out: PathLike) -> dict[str, int]:
    """Write the caption file and the split lists of a Karpathy split file into ``out``; images per split."""
    try:
        data = json.loads(check_readable(path).read_text(encoding="utf-8"))
        images = data["images"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as e:
        raise NmtkitError(f"{path}: not a Karpathy split file (a JSON object with 'images': {e})") from None
    lists: dict[str, list[str]] = {name: [] for name in dict.fromkeys(SPLITS.values())}
    lines = []
    for k, image in enumerate(images):
        try:
            name, split = image["filename"], SPLITS[image["split"]]
            captions = [" ".join(s["tokens"]) if s.get("tokens") else s["raw"].strip() for s in image["sentences"]]
        except (KeyError, TypeError) as e:
            raise NmtkitError(f"{path}: image {k} lacks {e} (filename, split, sentences)") from None
        lists[split].append(name)
        lines += [f"{name}\t{' '.join(c.split())}" for c in captions if c.strip()]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_output(out / "captions.tsv") as f:
        f.writelines(line + "\n" for line in lines)
    for split, names in lists.items():
        with atomic_output(out / f"{split}.txt") as f:
            f.writelines(name + "\n" for name in names)
    return {split: len(names) for split, names in lists.items()}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    try:
        counts = karpathy_split(sys.argv[1], sys.argv[2])
    except NmtkitError as e:
        sys.exit(f"error: {e}")
    print(", ".join(f"{split} {n:,} images" for split, n in counts.items()), file=sys.stderr)
