"""nmtkit caption: image paths in, captions out, one line per input line."""
from __future__ import annotations

from pathlib import Path

import click

from nmtkit.cli.decoding import CNN_WEIGHTS, decode, decoding_options
from nmtkit.cli.options import check_goes_with
from nmtkit.cli.paths import Command, ReadFile
from nmtkit.errors import NmtkitError


def listed_images(params: dict) -> list[tuple[str, str]]:
    """The images a list file (``-i``, a file: a pipe is read once, by the captioning) names, as inputs that no
    output may be (``-o`` naming one of them would replace that image by the captions)."""
    from nmtkit.data.text import is_stream

    path = params.get("input_path")
    if not path or is_stream(path) or not Path(path).is_file():
        return []
    with open(path, "rb") as f:
        return [(f"the image on line {n} of -i", line.strip().decode("utf-8", "replace"))
                for n, line in enumerate(f, 1) if line.strip()]


@click.command("caption", cls=Command, more_inputs=listed_images)
@decoding_options
@click.option("-i", "--input", "input_path", type=ReadFile(stdin=True), help="input file [default: stdin]")
@CNN_WEIGHTS
@click.option("--features", type=ReadFile(), metavar="FILE",
              help="caption precomputed features instead of images: .npy or HDF5 ('features' [images, grid, D]), "
                   "one caption per row (for models trained on preprocess --features)")
def command(input_path, cnn_weights, features, **options):
    """Caption images with a trained captioning model (show-attend-tell).

    Reads one image path a line (relative paths from the current folder) and writes one caption a line:
    an empty line gives an empty caption; an unreadable image gives an empty caption, a warning, and,
    once everything is written, an error naming its line (exit code 1). Features are made as the training
    corpus made them (the CNN, its weights and the image size are recorded in the checkpoint).
    --attention-out writes the attention over the image's grid of features (cells r0c0, r0c1, ...).
    """
    from nmtkit.search.sources import FeatureSource, check_captioner, check_features, image_source

    check_goes_with(("cnn_weights", not features, "images (not --features)"))
    verbs = ("captioning", "captioned")
    if features:
        from nmtkit.data.captions import load_features

        if input_path:
            raise NmtkitError("--features and -i/--input: give one of them", exit_code=2)
        given = FeatureSource(load_features(features, f"--features {features}"), name=f"--features {features}")

        def rows(loaded, path):
            check_captioner(loaded, path)
            check_features(loaded, given.stream, given.features, given.name)
            return given

        decode(rows, options, chunk_size=256, verbs=verbs, lines=given.lines(), name=given.name)
        return
    name = input_path or "<stdin>"
    decode(lambda loaded, path: image_source(loaded, path, cnn_weights, name), options,
           input_paths=(input_path,) if input_path else (), chunk_size=256, verbs=verbs, cnn_weights=cnn_weights)
