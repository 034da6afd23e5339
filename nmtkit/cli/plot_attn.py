"""nmtkit plot-attn: draw one sentence's attention from an attention file."""
from __future__ import annotations

import click

from nmtkit.cli.options import Checked
from nmtkit.cli.paths import Command, ReadFile, WriteFile
from nmtkit.config import COUNT
from nmtkit.errors import NmtkitError


@click.command("plot-attn", cls=Command)
@click.argument("attention_path", metavar="ATTN.h5", type=ReadFile())
@click.option("--index", required=True, type=Checked(int, COUNT), help="the sentence: its input line number - 1")
@click.option("-o", "--output", "out", required=True, type=WriteFile(),
              help="the figure: FILE.png, .pdf or .svg (written atomically)")
@click.option("--kind", type=click.Choice(["source", "target", "encoders"]), default="source", show_default=True,
              help="source attention, target (decoder self-) attention, or the weights over encoders")
@click.option("--word", type=Checked(int, COUNT), help="with --kind target: draw the weights of the previous words when "
                                       "generating output word K (0-based)")
@click.option("--font", type=ReadFile(), help="a font file for the labels (e.g. a CJK font)")
@click.option("--image", type=ReadFile(),
              help="captions ('nmtkit caption --attention-out'): overlay each word's attention on this image "
                   "(--word K: word K alone)")
@click.option("--input", "stream", metavar="STREAM",
              help="models with several inputs: the source attention over this input (e.g. mt, image) "
                   "[default: the first input]")
def command(attention_path, index, out, kind, word, font, image, stream):
    """Draw the attention of sentence INDEX of an attention file (translate --attention-out).

    \b
    nmtkit plot-attn attn.h5 --index 7 -o attn7.png
    nmtkit plot-attn attn.h5 --index 7 --kind target --word 5 -o target7.png
    nmtkit plot-attn captions.h5 --index 3 --image photo.jpg -o attn3.png
    nmtkit plot-attn ape.h5 --index 7 --input mt -o mt7.png
    """
    from nmtkit.data.text import check_readable
    from nmtkit.search.attention_file import AttentionFile
    from nmtkit.tools.figures import figure_format
    from nmtkit.tools.plot_attention import plot_image_attention, plot_sentence

    figure_format(out, "-o")
    with AttentionFile(check_readable(attention_path)) as f:
        sentence = f[index]
        # the first input's attention is 'source' (and --input, whichever it names, goes with --kind source alone)
        further = None if stream in f.inputs[:1] and kind == "source" else stream
    if image:
        if kind != "source":
            raise NmtkitError("--image draws the source attention over an image; drop --kind", exit_code=2)
        plot_image_attention(sentence, image, out, index, attention_path, word, font, further)
    else:
        plot_sentence(sentence, kind, out, index, attention_path, word, font, further)
