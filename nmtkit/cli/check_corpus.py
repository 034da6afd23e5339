"""nmtkit check-corpus: verify a corpus folder against its manifest."""
from __future__ import annotations

import click

from nmtkit.cli.paths import Command


@click.command("check-corpus", cls=Command)
@click.argument("folder", type=click.Path(file_okay=False))
def command(folder):
    """Verify the corpus FOLDER written by 'nmtkit preprocess', as 'train' does before its first update.

    Checks the manifest's structure, that every file is present with its recorded size and
    SHA-256, the vocabulary sizes, and every shard: its streams, offsets, example and row counts,
    and token ids within the vocabulary. Prints one line and exits 0 if all is well; otherwise one
    line naming the first damaged file, exit code 1.
    """
    from nmtkit.data.shards import Corpus
    from nmtkit.data.verify import verify_corpus

    checked = verify_corpus(Corpus.open(folder))
    examples = ", ".join(f"{n:,} {split}" for split, n in checked.examples.items())
    sums = "sizes and SHA-256 match the manifest" if checked.checksums else "no checksums recorded (nmtkit < 0.2)"
    click.echo(f"{folder}: ok: {checked.files} files ({checked.bytes:,} bytes), {sums}; {examples} examples")
