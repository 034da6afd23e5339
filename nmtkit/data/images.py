"""Captioning data: caption files, image lists, images read with Pillow, and CNN features in batches.

Caption files hold one caption a line, either in Flickr30k's layout (``results_20130124.token``:
``IMAGE#K<TAB>caption``) or as ``IMAGE<TAB>caption``; an image has as many lines as references, in order.
Images are resized to a square (the whole picture, no crop) and fed to :class:`~nmtkit.data.vgg.VGG16Features`.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import torch

from nmtkit.data.text import PathLike, check_readable, decode_line, strip_newline
from nmtkit.errors import NmtkitError
from nmtkit.progress import progress, warn

FLICKR_NUMBER = re.compile(r"#\d+$")  # Flickr30k's "IMAGE#K": the K-th caption of IMAGE


def read_captions(path: PathLike) -> dict[str, list[str]]:
    """Image name -> its captions, in file order, from a Flickr30k token file or an ``IMAGE<TAB>caption`` TSV."""
    captions: dict[str, list[str]] = {}
    with open(check_readable(path), "rb") as f:
        for lineno, raw in enumerate(f, 1):
            line = decode_line(strip_newline(raw), str(path), lineno)
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
                raise NmtkitError(f"{path}:{lineno}: expected IMAGE<TAB>caption (or Flickr30k's IMAGE#K<TAB>caption), "
                                  f"got {line[:60]!r}")
            captions.setdefault(FLICKR_NUMBER.sub("", fields[0].strip()), []).append(fields[1].strip())
    if not captions:
        raise NmtkitError(f"{path}: no captions")
    return captions


def read_image_list(path: PathLike) -> list[str]:
    """Image names or paths, one a line (blank lines skipped)."""
    with open(check_readable(path), "rb") as f:
        return [name for lineno, raw in enumerate(f, 1)
                if (name := decode_line(strip_newline(raw), str(path), lineno).strip())]


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise NmtkitError("reading images needs Pillow: pip install 'nmtkit[images]'", exit_code=2) from None
    return Image


def load_image(path: PathLike, size: int) -> torch.Tensor:
    """The image at ``path`` as RGB ``[3, size, size]`` in [0, 1]; an unreadable file is an error naming it."""
    image_module = _pillow()
    try:
        with image_module.open(path) as image:
            pixels = np.asarray(image.convert("RGB").resize((size, size), image_module.Resampling.BILINEAR))
    except FileNotFoundError:
        raise NmtkitError(f"{path}: no such image") from None
    except (OSError, ValueError, image_module.DecompressionBombError) as e:
        raise NmtkitError(f"{path}: cannot read the image ({str(e).splitlines()[0] if str(e) else type(e).__name__})") \
            from None
    return torch.from_numpy(pixels.copy()).permute(2, 0, 1).float().div_(255)


def extract_features(cnn: torch.nn.Module, paths: Sequence[PathLike], size: int,
                     batch_size: int = 16, skip_bad: bool = False, dtype: str = "float16",
                     label: str = "images") -> Iterator[Optional[np.ndarray]]:
    """Each image's features ``[grid, D]`` (as ``dtype``), in order, computed in batches with a progress bar;
    an unreadable image is an error, or with ``skip_bad`` a warning and None."""
    device = next(cnn.parameters()).device
    with progress() as bar, torch.inference_mode():
        task = bar.add_task(f"features of {label}", total=len(paths), info="")
        for start in range(0, len(paths), batch_size):
            chunk = paths[start:start + batch_size]
            images: list[Optional[torch.Tensor]] = []
            for path in chunk:
                try:
                    images.append(load_image(path, size))
                except NmtkitError as e:
                    if not skip_bad:
                        raise
                    warn(f"{e}; skipped (--skip-bad-images)")
                    images.append(None)
            good = [x for x in images if x is not None]
            features = iter(cnn(torch.stack(good).to(device)).float().cpu().numpy().astype(dtype)) if good else iter(())
            yield from (next(features) if x is not None else None for x in images)
            bar.advance(task, len(chunk))


def image_paths(names: Sequence[str], folder: Optional[PathLike]) -> list[Path]:
    """Image names resolved against ``folder`` (names that are absolute paths stay as they are)."""
    return [Path(folder) / n if folder is not None else Path(n) for n in names]
