"""nmtkit preprocess: parallel text -> corpus folder (vocabularies + HDF5 shards)."""
from __future__ import annotations

import click

from nmtkit.cli.options import Checked
from nmtkit.config import COUNT, POSITIVE
from nmtkit.data.preprocess import VocabSpec, preprocess


@click.command("preprocess")
@click.option("--train", "train", required=True, metavar="PREFIX", help="training text: PREFIX.SRC (each) and PREFIX.TGT")
@click.option("--valid", "valid", required=True, metavar="PREFIX", help="validation text prefix")
@click.option("--test", "test", metavar="PREFIX", help="optional test text prefix")
@click.option("--src", "src", required=True, multiple=True, metavar="[NAME=]SUFFIX",
              help="source file suffix, e.g. en; repeat for several sources (APE: --src src --src mt): the first "
                   "is the stream 'src', later ones are named by their suffix or NAME")
@click.option("--tgt", "tgt", required=True, metavar="LANG", help="target suffix, e.g. de")
@click.option("--vocab", default="spm:8000", show_default=True, metavar="KIND:SIZE",
              help="build vocabularies: spm (unigram), spm-bpe, or word (the SIZE most frequent words)")
@click.option("--joint/--separate", default=None,
              help="one vocabulary for both sides [default: joint for spm, separate for word]")
@click.option("--src-vocab", type=click.Path(dir_okay=False), help="reuse a vocabulary file (.model or word list)")
@click.option("--tgt-vocab", type=click.Path(dir_okay=False), help="reuse a vocabulary file (.model or word list)")
@click.option("--max-len", type=Checked(int, COUNT), default=50, show_default=True,
              help="drop training pairs with more tokens than this on either side (0: keep all)")
@click.option("--shard-size", type=Checked(int, POSITIVE), default=100_000, show_default=True, help="sentence pairs per HDF5 shard")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="corpus folder to create")
@click.option("--overwrite", is_flag=True, help="replace an existing corpus folder")
def command(train, valid, test, src, tgt, vocab, joint, src_vocab, tgt_vocab, max_len, shard_size, out, overwrite):
    """Segment parallel text, build or load vocabularies, and write HDF5 shards.

    Reads PREFIX.SRC (for every --src) and PREFIX.TGT for train, valid and (optionally) test,
    streaming the text so memory does not grow with the corpus. Training examples longer than
    --max-len or with an empty side are dropped and counted. --src-vocab serves every source.
    """
    spec = VocabSpec.parse(vocab, joint=joint, src_file=src_vocab, tgt_file=tgt_vocab)
    folder = preprocess(out, src, tgt, train, valid, test, spec, max_len or None, shard_size, overwrite)
    click.echo(f"wrote corpus to {folder}", err=True)
