"""nmtkit demo-corpus: write the embedded English-German number corpus."""
from __future__ import annotations

import click


@click.command("demo-corpus")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--train", default=20000, show_default=True, help="training pairs")
@click.option("--valid", default=500, show_default=True, help="validation pairs")
@click.option("--test", default=500, show_default=True, help="test pairs")
@click.option("--seed", default=1, show_default=True)
def command(folder, train, valid, test, seed):
    """Write a small English->German corpus of numbers in words to FOLDER.

    Files train/valid/test.{en,de}; a task with real reordering (German puts units before
    tens) that a small model learns in minutes on a CPU. Used by recipes/demo.sh.
    """
    from nmtkit.data.numbers import write_demo_corpus

    write_demo_corpus(folder, train, valid, test, seed)
    click.echo(f"wrote {train}/{valid}/{test} pairs to {folder}", err=True)
