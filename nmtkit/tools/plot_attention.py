"""Pictures of one sentence's attention from an attention file.

- ``source``: output tokens × source tokens (target-target-attention.txt Fig. 3 left,
  bidirectional-target-attention.txt Fig. 4); for a model with several inputs, over the first input, or over a
  further input (``source.<stream>`` against that input's tokens);
- ``target``: output tokens × previous output tokens, the decoder's attention over its own
  history; with a word K, a bar chart of the weights of the words before K when generating K
  (target-target-attention.txt Fig. 3);
- ``encoders``: encoders (and sentinel) × output tokens, as multi-source-attention.txt Fig. 2;
- a caption's source attention over the image: one panel per output word (or one word), the weights of the
  feature grid upsampled over the picture, as in Show, Attend and Tell's figures.

Figures grow with the sentence (about 0.3 inch per token) and x labels are vertical, so long
sentences stay legible.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from nmtkit.data.text import PathLike
from nmtkit.errors import NmtkitError
from nmtkit.search.sources import grid_labels
from nmtkit.tools.figures import pyplot, save_figure, setup_fonts

KINDS = ("source", "target", "encoders")
CELL = 0.3  # inches per token


def sentence_attention(sentence: dict, kind: str, index: int, path: PathLike) -> np.ndarray:
    """The ``kind`` matrix of a sentence read from an attention file, or a clear error."""
    if not sentence["tgt_tokens"]:
        raise NmtkitError(f"{path}: sentence {index} is empty (its input line was empty or unusable)")
    matrices = sentence["attention"]
    if kind not in matrices:
        present = ", ".join(sorted(matrices)) or "none"
        raise NmtkitError(f"{path}: sentence {index} has no {kind!r} attention (it has: {present}); "
                          f"the model that wrote the file does not compute it")
    return matrices[kind]


def input_attention(sentence: dict, stream: Optional[str], index: int, path: PathLike) -> tuple[np.ndarray, list[str]]:
    """The source attention of a sentence over one of its inputs, and that input's tokens: the first input's for
    None, else those of the further input ``stream`` (``source.<stream>``)."""
    if stream is None:
        return sentence_attention(sentence, "source", index, path), sentence["src_tokens"]
    return sentence_attention(sentence, f"source.{stream}", index, path), sentence["input_tokens"][stream]


def _heatmap(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], xlabel: str, ylabel: str, title: str,
             font: Optional[PathLike]):
    setup_fonts([*rows, *cols, title], font)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(4.0, CELL * len(cols) + 2.5), max(3.0, CELL * len(rows) + 1.5)))
    import matplotlib

    cmap = matplotlib.colormaps["Greys"].with_extremes(bad="#dde6f0")  # cells that cannot get weight (the future)
    image = ax.imshow(matrix, cmap=cmap, vmin=0.0, vmax=max(float(np.nanmax(matrix)) if matrix.size else 1.0, 1e-9),
                      aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=90)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    return fig


def plot_sentence(sentence: dict, kind: str, out: PathLike, index: int, path: PathLike,
                  word: Optional[int] = None, font: Optional[PathLike] = None, stream: Optional[str] = None) -> None:
    """Draw the ``kind`` attention of sentence ``index`` (read from ``path``) to ``out``.

    ``word`` (target only) is the 0-based position K of an output token: draw the weights of
    the K tokens before it instead of the whole matrix. ``stream`` (source only) names a further input of a
    model with several, whose attention is drawn instead of the first input's.
    """
    if word is not None and kind != "target":
        raise NmtkitError("--word goes with --kind target", exit_code=2)
    if stream is not None and kind != "source":
        raise NmtkitError("--input goes with --kind source", exit_code=2)
    tgt = sentence["tgt_tokens"]
    if kind == "source":
        matrix, src = input_attention(sentence, stream, index, path)
        title = "source attention" if stream is None else f"attention over {stream}"
        fig = _heatmap(matrix[:, :len(src)], tgt, src, stream or "source", "output", f"sentence {index}: {title}", font)
    elif kind == "target":
        matrix = sentence_attention(sentence, kind, index, path)
        n = len(tgt)
        if n < 2:
            raise NmtkitError(f"{path}: sentence {index} has a single output token, so no target attention to draw")
        if word is None:
            masked = np.where(np.tril(np.ones((n, n - 1)), -1) > 0, matrix[:n, :n - 1], np.nan)
            fig = _heatmap(masked, tgt, tgt[:n - 1], "previous output", "output",
                           f"sentence {index}: target attention", font)
        else:
            if not 1 <= word < n:
                raise NmtkitError(f"--word: sentence {index} has output tokens 0..{n - 1}, and token 0 has no "
                                  f"previous word; choose 1..{n - 1}", exit_code=2)
            fig = _bars(matrix[word, :word], tgt[:word], f"sentence {index}: generating {tgt[word]!r} "
                        f"(word {word})", font)
    else:
        matrix = sentence_attention(sentence, kind, index, path)
        labels = sentence.get("labels", {}).get("encoders") or [f"encoder {k + 1}" for k in range(matrix.shape[1])]
        fig = _heatmap(matrix.T, labels, tgt, "output", "encoder", f"sentence {index}: attention over encoders", font)
    save_figure(fig, out)


def grid_side(src_tokens: Sequence[str]) -> Optional[int]:
    """The side of the square feature grid whose cells (:func:`~nmtkit.search.sources.grid_labels`) the source
    tokens name, or None."""
    side = math.isqrt(len(src_tokens))
    return side if side and side * side == len(src_tokens) and list(src_tokens) == grid_labels(len(src_tokens)) \
        else None


def plot_image_attention(sentence: dict, image_path: PathLike, out: PathLike, index: int, path: PathLike,
                         word: Optional[int] = None, font: Optional[PathLike] = None,
                         stream: Optional[str] = None) -> None:
    """Overlay a caption's attention over the image's feature grid on the picture: one panel per output word, or
    output word ``word`` (0-based) alone; ``stream``: the attention over that further input (a multimodal
    translation's image) instead of the first."""
    from nmtkit.data.images import load_image

    matrix, tokens = input_attention(sentence, stream, index, path)
    side = grid_side(tokens)
    if side is None:
        raise NmtkitError(f"{path}: sentence {index} attends to {len(tokens)} tokens of {stream or 'the source'}, "
                          "not to an image's feature grid (r0c0, r0c1, ...): --image goes with 'nmtkit caption' "
                          "files, or --input naming an image stream", exit_code=2)
    words = sentence["tgt_tokens"]
    if word is not None and not 0 <= word < len(words):
        raise NmtkitError(f"--word: sentence {index} has output tokens 0..{len(words) - 1}", exit_code=2)
    shown = [word] if word is not None else list(range(len(words)))
    picture = load_image(image_path, 224).permute(1, 2, 0).numpy()
    setup_fonts([words[k] for k in shown], font)
    plt = pyplot()
    columns = min(len(shown), 6)
    rows = (len(shown) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(2.2 * columns, 2.4 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, k in zip(axes.flat, shown):
        grid = matrix[k, :side * side].reshape(side, side)
        ax.imshow(picture)
        ax.imshow(grid / max(float(grid.max()), 1e-9), cmap="Greys_r", alpha=0.6, interpolation="bilinear",
                  extent=(0, picture.shape[1], picture.shape[0], 0), vmin=0, vmax=1)
        ax.set_title(words[k])
    fig.suptitle(f"sentence {index}: attention over the image")
    fig.tight_layout()
    save_figure(fig, out)


def _bars(weights: np.ndarray, words: Sequence[str], title: str, font: Optional[PathLike]):
    setup_fonts([*words, title], font)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(words) + 2), 3.5))
    ax.bar(range(len(words)), weights, color="C0")
    ax.set_xticks(range(len(words)))
    ax.set_xticklabels(words, rotation=90)
    ax.set_ylim(0, 1)
    ax.set_ylabel("attention weight")
    ax.set_xlabel("previous output")
    ax.set_title(title)
    fig.tight_layout()
    return fig
