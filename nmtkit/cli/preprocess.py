"""nmtkit preprocess: parallel text (with images beside it, or not), or images and captions -> corpus folder
(vocabularies + HDF5 shards)."""
from __future__ import annotations

from pathlib import Path

import click

from nmtkit.cli.options import Checked, check_goes_with
from nmtkit.cli.paths import Command, ReadFile
from nmtkit.config import COUNT, DEVICE, POSITIVE, Range, at_least
from nmtkit.data.images import ImageSpec
from nmtkit.data.preprocess import SourceImages, VocabSpec, preprocess
from nmtkit.errors import NmtkitError


@click.command("preprocess", cls=Command)
@click.option("--train", "train", required=True, metavar="PREFIX",
              help="training text: PREFIX.SRC (each) and PREFIX.TGT; with --captions, a file listing the training images")
@click.option("--valid", "valid", required=True, metavar="PREFIX", help="validation text prefix (or image list)")
@click.option("--test", "test", metavar="PREFIX", help="optional test text prefix (or image list)")
@click.option("--src", "src", multiple=True, metavar="[NAME=]SUFFIX",
              help="source file suffix, e.g. en; repeat for several sources (APE: --src src --src mt): the first "
                   "is the stream 'src', later ones are named by their suffix or NAME")
@click.option("--ape-edits", metavar="STREAM",
              help="automatic post-editing: encode the target as the edit operations (<keep>, <delete>, inserted "
                   "words) turning this source stream (the MT output, e.g. mt) into it; needs a word vocabulary")
@click.option("--src-images", metavar="SUFFIX",
              help="multimodal translation: PREFIX.SUFFIX lists one image a line (under --images, or absolute), "
                   "line-aligned with the text: the feature stream 'image'")
@click.option("--tgt", "tgt", required=True, metavar="LANG", help="target suffix, e.g. de (captions: their language)")
@click.option("--vocab", metavar="KIND:SIZE",
              help="build vocabularies: spm (unigram), spm-bpe, or word (the SIZE most frequent words) "
                   "[default: spm:8000; captions word:10000]")
@click.option("--character-coverage", type=Checked(float, Range(0.98, 1)),
              help="spm: the share of the training text's characters that get their own piece; rarer ones become "
                   "<unk> (1.0 for small alphabets, 0.9995 for Chinese or Japanese) [default: 0.9995]")
@click.option("--spm-sample", type=Checked(int, Range(1000, 100_000_000)),
              help="spm: train the SentencePiece model on at most N lines sampled from the training text (memory "
                   "stays bounded however large the corpus: about 1.2 GB for 500,000 lines of 84 characters, growing with "
                   "the sample's characters) [default: 500,000]")
@click.option("--joint/--separate", default=None,
              help="one vocabulary for both sides [default: joint for spm, separate for word]")
@click.option("--src-vocab", type=ReadFile(), help="reuse a vocabulary file (.model or word list)")
@click.option("--tgt-vocab", type=ReadFile(), help="reuse a vocabulary file (.model or word list)")
@click.option("--max-len", type=Checked(int, COUNT), default=50, show_default=True,
              help="drop training pairs with more tokens than this on either side (0: keep all)")
@click.option("--shard-size", type=Checked(int, POSITIVE), metavar="N",
              help="examples per HDF5 shard [default: 100,000; captions 10,000]")
@click.option("--captions", type=ReadFile(), metavar="FILE",
              help="captioning: the captions of every image (Flickr30k's IMAGE#K<TAB>caption, or IMAGE<TAB>caption); "
                   "--train/--valid/--test then list each split's images")
@click.option("--images", type=click.Path(file_okay=False), metavar="DIR",
              help="captioning, --src-images: the folder of the images")
@click.option("--features", multiple=True, metavar="SPLIT=FILE",
              help="captioning, --src-images: a split's features precomputed, .npy or HDF5 ('features' [images or "
                   "lines, grid, D])")
@click.option("--cnn-weights", type=ReadFile(), metavar="FILE",
              help="images: torchvision's ImageNet VGG16 weights (vgg16-397923af.pth); without, random weights")
@click.option("--cnn-seed", type=Checked(int, COUNT), default=1, show_default=True,
              help="images: the seed of the random CNN weights when no --cnn-weights")
@click.option("--image-size", type=Checked(int, at_least(16)), default=224, show_default=True,
              help="images: resized to this square (224: a 14 x 14 grid of conv5_3 features; at least 16, as VGG16 "
                   "pools four times)")
@click.option("--features-dtype", type=click.Choice(["float16", "float32"]), default="float16", show_default=True)
@click.option("--image-batch-size", type=Checked(int, POSITIVE), default=16, show_default=True,
              help="images: how many per CNN batch")
@click.option("--skip-bad-images", is_flag=True,
              help="captioning: skip (and count) unreadable images instead of stopping; --src-images: drop (and "
                   "count) training lines with one")
@click.option("--device", type=Checked(str, DEVICE), default="auto", show_default=True,
              help="images: where the CNN runs (cpu, cuda, cuda:N, mps or auto)")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="corpus folder to create")
@click.option("--overwrite", is_flag=True,
              help="replace a corpus folder preprocess made (never one holding other files or an input)")
def command(**o):
    """Segment parallel text, build or load vocabularies, and write HDF5 shards; or, with --captions,
    turn images into CNN features beside their captions.

    Reads PREFIX.SRC (for every --src) and PREFIX.TGT for train, valid and (optionally) test,
    streaming the text so memory does not grow with the corpus. Training examples longer than
    --max-len or with an empty side are dropped and counted. --src-vocab serves every source.
    --src-images adds the CNN features of the images PREFIX.SUFFIX lists, line by line.
    """
    folder = _captions(o) if o["captions"] else _text(o)
    click.echo(f"wrote corpus to {folder}", err=True)


def _vocab_spec(o: dict, default: str, **given) -> VocabSpec:
    """``--vocab`` (or ``default``) with ``--character-coverage`` and ``--spm-sample``, which only a SentencePiece
    model built here uses."""
    files = [given[side] for side in ("src_file", "tgt_file") if side in given]
    if o["vocab"] and all(files):
        options = " and ".join(f"--{side[:3]}-vocab" for side in ("src_file", "tgt_file") if side in given)
        raise NmtkitError(f"--vocab: builds a vocabulary, but {options} give{'s' if len(files) == 1 else ''} every "
                          "one; leave --vocab out", exit_code=2)
    spec = VocabSpec.parse(o["vocab"] or default, **given)
    for option, field in (("character_coverage", "character_coverage"), ("spm_sample", "sample")):
        if o[option] is None:
            continue
        if not spec.kind.startswith("spm") or spec.src_file or spec.tgt_file:
            raise NmtkitError(f"--{option.replace('_', '-')} goes with a SentencePiece vocabulary built here (--vocab "
                              "spm:N or spm-bpe:N, no --src-vocab/--tgt-vocab)", exit_code=2)
        setattr(spec, field, o[option])
    return spec


def _text(o: dict) -> Path:
    if not o["src"]:
        raise NmtkitError("--src: give the source suffix (or --captions for captioning data)", exit_code=2)
    if not o["src_images"] and (o["images"] or o["features"]):
        raise NmtkitError("--images and --features go with --src-images (an image list beside the text) or with "
                          "--captions", exit_code=2)
    spec = _vocab_spec(o, "spm:8000", joint=o["joint"], src_file=o["src_vocab"], tgt_file=o["tgt_vocab"])
    images = None
    if o["src_images"]:
        image_spec, given = _image_options(o)
        images = SourceImages(o["src_images"], o["images"], image_spec, given)
    else:
        _check_cnn_options(False)
    return preprocess(o["out"], o["src"], o["tgt"], o["train"], o["valid"], o["test"], spec, o["max_len"] or None,
                      o["shard_size"] or 100_000, o["overwrite"], o["ape_edits"], images)


def _splits(o: dict) -> dict[str, str]:
    """The splits given: train, valid and test if any."""
    return {"train": o["train"], "valid": o["valid"], **({"test": o["test"]} if o["test"] else {})}


def _image_options(o: dict) -> tuple[ImageSpec, dict[str, str]]:
    """How features are made from images (--cnn-weights, --image-size, ...), and those given (--features,
    split -> file); --images is needed unless every split's features are given."""
    from nmtkit.device import pick_device

    given = {}
    for item in o["features"]:
        split, _, file = item.partition("=")
        if not file or split not in ("train", "valid", "test"):
            raise NmtkitError(f"--features {item!r}: expected SPLIT=FILE with SPLIT train, valid or test", exit_code=2)
        given[split] = file
    if o["images"] is None and set(given) != set(_splits(o)):
        raise NmtkitError("--images: give the folder of the images (or --features for every split)", exit_code=2)
    _check_cnn_options(not set(_splits(o)) <= set(given))
    weights = str(Path(o["cnn_weights"]).resolve()) if o["cnn_weights"] else None
    spec = ImageSpec(o["image_size"], weights, o["cnn_seed"], o["features_dtype"], o["image_batch_size"],
                     o["skip_bad_images"], str(pick_device(o["device"])))
    return spec, given


def _check_cnn_options(used: bool) -> None:
    """The options of the CNN that makes features from images, refused where it makes none (text alone, or every
    split's features given)."""
    cnn = ("cnn_weights", "cnn_seed", "image_size", "features_dtype", "image_batch_size", "skip_bad_images", "device")
    check_goes_with(*((name, used, "images that preprocess makes features of (--captions or --src-images, a split "
                                   "without --features)") for name in cnn))


def _captions(o: dict) -> Path:
    from nmtkit.data.captions import preprocess_captions

    if o["src"] or o["src_vocab"] or o["ape_edits"] or o["src_images"]:
        raise NmtkitError("--src and --src-vocab are for text, and so are --ape-edits and --src-images; captioning data "
                          "has images as its source", exit_code=2)
    spec, given = _image_options(o)
    vocab = _vocab_spec(o, "word:10000", joint=False, tgt_file=o["tgt_vocab"])
    return preprocess_captions(o["out"], o["captions"], _splits(o), o["tgt"], o["images"], vocab, spec, given,
                               o["max_len"] or None, o["shard_size"] or 10_000, o["overwrite"])
