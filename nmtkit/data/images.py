"""Image data: caption files, image lists, images read with Pillow, CNN features in batches, and each split's
features for preprocessing (made by the CNN, or given precomputed), for captioning and multimodal corpora.

Caption files hold one caption a line, either in Flickr30k's layout (``results_20130124.token``:
``IMAGE#K<TAB>caption``) or as ``IMAGE<TAB>caption``; an image has as many lines as references, in order.
Images are resized to a square (the whole picture, no crop) and fed to :class:`~nmtkit.data.vgg.VGG16Features`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence

import numpy as np
import torch

from nmtkit.data.manifest import file_record
from nmtkit.data.streams import FEATURES
from nmtkit.data.text import PathLike, check_readable, decode_line, strip_newline
from nmtkit.data.vgg import FEATURE_SIZE, VGG16Features
from nmtkit.errors import NmtkitError
from nmtkit.progress import progress, warn

IMAGE = "image"  # the feature stream of a corpus' images
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
    except IsADirectoryError:  # (an empty line of a list under --images names the folder itself)
        raise NmtkitError(f"{path}: a folder, not an image") from None
    except (OSError, ValueError, image_module.DecompressionBombError) as e:
        raise NmtkitError(f"{path}: cannot read the image ({str(e).splitlines()[0] if str(e) else type(e).__name__})") \
            from None
    return torch.from_numpy(pixels.copy()).permute(2, 0, 1).float().div_(255)


def extract_features(cnn: torch.nn.Module, paths: Sequence[PathLike], size: int,
                     batch_size: int = 16, skip_bad: bool = False, dtype: str = "float16",
                     label: str = "images", names: Optional[Sequence[str]] = None) -> Iterator[Optional[np.ndarray]]:
    """Each image's features ``[grid, D]`` (as ``dtype``), in order, computed in batches with a progress bar;
    an unreadable image is an error, or with ``skip_bad`` a warning and None. ``names`` (one per path, such as
    ``list:line``) go before the messages about each image."""
    device = next(cnn.parameters()).device
    with progress() as bar, torch.inference_mode():
        task = bar.add_task(f"features of {label}", total=len(paths), info="")
        for start in range(0, len(paths), batch_size):
            chunk = paths[start:start + batch_size]
            images: list[Optional[torch.Tensor]] = []
            for k, path in enumerate(chunk, start):
                try:
                    images.append(load_image(path, size))
                except NmtkitError as e:
                    message = f"{names[k]}: {e}" if names is not None else str(e)
                    if not skip_bad:
                        raise NmtkitError(message) from None
                    warn(f"{message}; skipped (--skip-bad-images)")
                    images.append(None)
            good = [x for x in images if x is not None]
            features = iter(cnn(torch.stack(good).to(device)).float().cpu().numpy().astype(dtype)) if good else iter(())
            yield from (next(features) if x is not None else None for x in images)
            bar.advance(task, len(chunk))


def image_paths(names: Sequence[str], folder: Optional[PathLike]) -> list[Path]:
    """Image names resolved against ``folder`` (names that are absolute paths stay as they are)."""
    return [Path(folder) / n if folder is not None else Path(n) for n in names]


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

    @property
    def grid(self) -> int:
        """The cells of the feature grid of an image: (``size`` / 16)², VGG16 pooling four times (196 at 224 px)."""
        return (self.size // 16) ** 2

    def record(self) -> dict:
        """What the manifest and checkpoints keep, to make the same features again."""
        out = {"cnn": "vgg16", "size": self.size, "seed": self.seed, "dtype": self.dtype, "weights": self.weights}
        if self.weights:
            out["weights_sha256"] = file_record(self.weights)["sha256"]
        return out

    @classmethod
    def from_record(cls, record: Mapping, weights: Optional[str] = None) -> "ImageSpec":
        """The spec a manifest recorded (``weights`` overrides the file's path, which must hold the same bytes)."""
        if weights and not record.get("weights"):
            raise NmtkitError(f"--cnn-weights {weights}: the features this model was trained on were made with random "
                              f"CNN weights (seed {record.get('seed')}), not a weights file; leave --cnn-weights out",
                              exit_code=2)
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


FEATURE_SUFFIXES = (".npy", ".h5", ".hdf5")  #: files of precomputed features, as :func:`load_features` reads them


def load_features(path: PathLike, option: str, count: Optional[int] = None, rows: str = "images") -> np.ndarray:
    """Precomputed features ``[images, grid, D]`` from ``.npy`` (memory-mapped) or HDF5 (dataset ``features``),
    ``count`` of them if given, one for each of that many ``rows`` (images, or lines of text), as messages say;
    errors name ``option`` (e.g. ``--features test=FILE``); its rows go through :func:`finite_row` as they are
    read."""
    path = Path(path)
    try:
        if path.suffix in FEATURE_SUFFIXES[1:]:
            import h5py
            with h5py.File(path, "r") as f:
                array = f["features"][()]
        else:
            with open(path, "rb") as f:
                if f.read(6) != b"\x93NUMPY":  # (numpy would take it for pickled objects, and say so)
                    raise NmtkitError(f"{option}: not a NumPy .npy file (nor HDF5, {FEATURE_SUFFIXES[1]} or "
                                      f"{FEATURE_SUFFIXES[2]}, with a dataset 'features')", exit_code=2)
            array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, KeyError, ValueError) as e:
        raise NmtkitError(f"{option}: cannot read ({str(e).splitlines()[0]})", exit_code=2) from None
    if array.ndim != 3 or (count is not None and len(array) != count):
        wanted = f"{count} {rows}" if count is not None else rows
        raise NmtkitError(f"{option}: expected an array [{wanted}, grid, D], got shape {tuple(array.shape)}",
                          exit_code=2)
    if not np.issubdtype(array.dtype, np.floating):
        raise NmtkitError(f"{option}: features of type {array.dtype}, expected floating-point numbers (float16, "
                          "float32 or float64)", exit_code=2)
    if 0 in array.shape[1:]:
        raise NmtkitError(f"{option}: features of shape {tuple(array.shape)}: an image of no grid cell or of "
                          "features of size 0, which nothing can attend to", exit_code=2)
    return array


def finite_row(row: np.ndarray, option: str, index: int) -> np.ndarray:
    """``row``, the features of image ``index`` (from 0) of the file ``option`` names, checked as it is read (a
    large file is read once): every value a finite number, else a one-line error."""
    if not np.isfinite(row).all():
        raise NmtkitError(f"{option}: the features of image {index + 1} are not all finite numbers (NaN or infinite)",
                          exit_code=2)
    return row


class SplitFeatures:
    """The image features of each split of a corpus being preprocessed: given precomputed (``given``: split ->
    ``--features`` file, checked against the split's ``counts`` at once: of images, or of ``rows``), or made by the
    CNN of ``spec``."""

    def __init__(self, spec: ImageSpec, given: Mapping[str, PathLike], counts: Mapping[str, int],
                 rows: str = "images"):
        unknown = sorted(set(given) - set(counts))
        if unknown:
            raise NmtkitError(f"--features {unknown[0]}=...: no such split (splits: {', '.join(counts)})", exit_code=2)
        self.spec, self.given = spec, {split: str(file) for split, file in given.items()}
        self.arrays = {split: load_features(file, f"--features {split}={file}", counts[split], rows)
                       for split, file in self.given.items()}
        self.uses_cnn = not set(given) >= set(counts)
        self._cnn: Optional[VGG16Features] = None
        sizes = {split: int(a.shape[-1]) for split, a in self.arrays.items()}
        self.size = FEATURE_SIZE if self.uses_cnn else next(iter(sizes.values()))
        odd = [split for split, n in sizes.items() if n != self.size]
        if odd:
            raise NmtkitError(f"--features {odd[0]}={self.given[odd[0]]}: features of size {sizes[odd[0]]}, but "
                              f"{'the CNN makes' if self.uses_cnn else 'another split has'} size {self.size}",
                              exit_code=2)
        grids = {split: int(a.shape[1]) for split, a in self.arrays.items()}
        grid = spec.grid if self.uses_cnn else next(iter(grids.values()), 0)
        odd = [split for split, n in grids.items() if n != grid]
        if odd:  # (a model learns one grid: translate and caption refuse another)
            made = f"the CNN makes {grid} (--image-size {spec.size})" if self.uses_cnn else f"another split has {grid}"
            raise NmtkitError(f"--features {odd[0]}={self.given[odd[0]]}: a grid of {grids[odd[0]]} cells, but {made}",
                              exit_code=2)

    def stream(self, lang: str = "") -> dict:
        """The entry of the feature stream in the manifest's ``streams``."""
        return {"kind": FEATURES, "lang": lang, "size": self.size}

    def record(self) -> dict:
        """The manifest's ``options`` about features: ``images``, how the CNN made them (None if it made none),
        and ``features``, the files given."""
        return {"images": self.spec.record() if self.uses_cnn else None, "features": dict(self.given)}

    def of(self, split: str, paths: Sequence[PathLike], skip_bad: bool = False,
           names: Optional[Sequence[str]] = None) -> Iterator[Optional[np.ndarray]]:
        """The split's features in order: the given array's rows, or those of the images at ``paths`` (see
        :func:`extract_features` for ``skip_bad`` and ``names``)."""
        if split in self.arrays:
            option = f"--features {split}={self.given[split]}"
            return (finite_row(np.asarray(row), option, k) for k, row in enumerate(self.arrays[split]))
        if self._cnn is None:
            self._cnn = self.spec.network()
        return extract_features(self._cnn, paths, self.spec.size, self.spec.batch_size, skip_bad, self.spec.dtype,
                                f"{split} images", names)
