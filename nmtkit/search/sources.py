"""What one input line becomes for the search: token ids of a text line (``translate``) or the CNN features of
the image a line names (``caption``). An unusable line gives None (an empty output line), a warning naming
it, and its number in ``invalid``."""
from __future__ import annotations

import math
from typing import Optional, Protocol, Union

import numpy as np
import torch

from nmtkit.data.text import strip_newline, without_bom
from nmtkit.data.vocab import Vocab
from nmtkit.errors import NmtkitError
from nmtkit.progress import warn

Item = Union[list[int], np.ndarray]


class Source(Protocol):
    stream: str  #: the input stream the model reads
    problem: str  #: what was wrong with the lines in ``invalid``, for the final error
    invalid: list[int]  #: numbers (from 1) of the lines that gave None

    def read(self, index: int, raw: bytes) -> Optional[Item]:
        """Line ``index`` (from 0) as the model's input, or None."""

    def labels(self, item: Item) -> list[str]:
        """Names of the positions the model attends to, for attention files."""


def grid_labels(count: int) -> list[str]:
    """Names of the cells of a square feature grid, row by row: ``r0c0``, ``r0c1``, ... (14 x 14 for VGG16 at
    224 px); ``f0``, ``f1``, ... for features that do not form a square."""
    side = math.isqrt(count)
    if side * side != count:
        return [f"f{i}" for i in range(count)]
    return [f"r{i}c{j}" for i in range(side) for j in range(side)]


class TextSource:
    """Text lines to token ids; a line longer than ``max_input_len`` tokens is truncated with a warning."""

    stream, problem = "src", "of invalid UTF-8"

    def __init__(self, vocab: Vocab, max_input_len: int = 250, name: str = "<stdin>"):
        self.vocab, self.max_input_len, self.name = vocab, max_input_len, name
        self.invalid: list[int] = []
        self.truncated = 0

    def read(self, index: int, raw: bytes) -> Optional[list[int]]:
        try:
            text = without_bom(strip_newline(raw), index + 1).decode("utf-8")
        except UnicodeDecodeError as e:
            warn(f"{self.name}:{index + 1}: invalid UTF-8 (byte {e.start + 1} of the line); writing an empty line")
            self.invalid.append(index + 1)
            return None
        if not text.strip():
            return None
        ids = self.vocab.encode(text)
        if len(ids) > self.max_input_len:
            warn(f"{self.name}:{index + 1}: {len(ids)} tokens, truncated to {self.max_input_len} (--max-input-len)")
            self.truncated += 1
            ids = ids[:self.max_input_len]
        return ids

    def labels(self, item: Item) -> list[str]:
        return self.vocab.id_to_token(list(item)) + ["</s>"]


class ImageSource:
    """Lines naming image files to their features through ``cnn`` (the features the model was trained on)."""

    stream, problem = "image", "naming an unreadable image"

    def __init__(self, cnn: torch.nn.Module, size: int, name: str = "<stdin>"):
        self.cnn, self.size, self.name = cnn, size, name
        self.invalid: list[int] = []

    def read(self, index: int, raw: bytes) -> Optional[np.ndarray]:
        from nmtkit.data.images import load_image

        try:
            path = without_bom(strip_newline(raw), index + 1).decode("utf-8").strip()
            if not path:
                return None
            image = load_image(path, self.size)
        except (UnicodeDecodeError, NmtkitError) as e:
            problem = "not a UTF-8 file name" if isinstance(e, UnicodeDecodeError) else e
            warn(f"{self.name}:{index + 1}: {problem}; writing an empty line")
            self.invalid.append(index + 1)
            return None
        with torch.inference_mode():
            device = next(self.cnn.parameters()).device
            return self.cnn(image.unsqueeze(0).to(device))[0].float().cpu().numpy()

    def labels(self, item: Item) -> list[str]:
        return grid_labels(len(item))


class FeatureSource:
    """Rows of a precomputed feature array ``[images, grid, D]`` (``caption --features``): line i is row i."""

    stream, problem = "image", "without features"

    def __init__(self, features: np.ndarray):
        self.features = features
        self.invalid: list[int] = []

    def lines(self) -> list[bytes]:
        """One (empty) line per row, for the decoding loop."""
        return [b""] * len(self.features)

    def read(self, index: int, raw: bytes) -> np.ndarray:
        return np.asarray(self.features[index], dtype=np.float32)

    def labels(self, item: Item) -> list[str]:
        return grid_labels(len(item))


def image_source(loaded, model_path: str, cnn_weights: Optional[str] = None, name: str = "<stdin>") -> ImageSource:
    """The :class:`ImageSource` of a loaded captioning model: features made as its training corpus made them
    (the record its checkpoint carries; ``cnn_weights`` if the weights file has moved)."""
    from nmtkit.data.captions import ImageSpec

    if loaded.model.inputs != ("image",):
        raise NmtkitError(f"{model_path}: a {loaded.config['arch']} model reads {', '.join(loaded.model.inputs)}, "
                          "not images; use 'nmtkit translate'", exit_code=2)
    if not loaded.images:
        raise NmtkitError(f"{model_path}: its corpus had precomputed features, so nmtkit cannot make them from images",
                          exit_code=2)
    spec = ImageSpec.from_record(loaded.images, cnn_weights)
    return ImageSource(spec.network().to(next(loaded.model.parameters()).device), spec.size, name)
