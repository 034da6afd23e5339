"""nmtkit demo-corpus: write the embedded English-German number corpus."""
from __future__ import annotations

import click

from nmtkit.cli.options import Checked
from nmtkit.cli.paths import Command
from nmtkit.config import Range


@click.command("demo-corpus", cls=Command)
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--train", type=Checked(int, Range(1, 500_000)), default=20000, show_default=True, help="training pairs")
@click.option("--valid", type=Checked(int, Range(1, 50_000)), default=500, show_default=True, help="validation pairs")
@click.option("--test", type=Checked(int, Range(1, 50_000)), default=500, show_default=True, help="test pairs")
@click.option("--seed", type=Checked(int, Range(0, 2**32 - 1)), default=1, show_default=True)
def command(folder, train, valid, test, seed):
    """Write a small English->German corpus of numbers in words as the new folder FOLDER (replacing only a demo
    corpus written before, never a folder holding anything else).

    Files train/valid/test.{en,de}; a task with real reordering (German puts units before
    tens) that a small model learns in minutes on a CPU. Used by recipes/demo.sh. The splits hold
    different numbers, all below a million; together they are at most 500,000 pairs.
    """
    from nmtkit.data.numbers import write_demo_corpus

    write_demo_corpus(folder, train, valid, test, seed)
    click.echo(f"wrote {train}/{valid}/{test} pairs to {folder}", err=True)
