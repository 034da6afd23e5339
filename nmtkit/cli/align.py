"""nmtkit align: a word translation table t(target | source) from a parallel corpus."""
from __future__ import annotations

import click

from nmtkit.cli.options import Checked, check_goes_with
from nmtkit.cli.paths import Command, ReadFile, WriteFile
from nmtkit.config import POSITIVE, PROBABILITY, Range


@click.command("align", cls=Command)
@click.option("--src", "src_path", required=True, type=ReadFile(), help="source side, one sentence per line")
@click.option("--tgt", "tgt_path", required=True, type=ReadFile(), help="target side, same number of lines")
@click.option("-o", "--output", "output_path", type=WriteFile(),
              help="table file 'src<TAB>tgt<TAB>prob', written atomically [default: stdout]")
@click.option("--links", "links_path", type=ReadFile(),
              help="count links 'i-j' from this Pharaoh-format file (eflomal, fast_align, GIZA++) instead of running EM")
@click.option("--iterations", type=Checked(int, POSITIVE), default=5, show_default=True, help="EM iterations")
@click.option("--diagonal-tension", type=Checked(float, Range(0, 100)), default=4.0, show_default=True, help="λ of the diagonal prior (fast_align's -T)")
@click.option("--null-prob", type=Checked(float, PROBABILITY), default=0.08, show_default=True, help="probability of aligning to NULL (fast_align's p0)")
@click.option("--min-prob", type=Checked(float, Range(0, 1)), default=0.01, show_default=True, help="leave out entries with t below this")
def command(src_path, tgt_path, output_path, links_path, iterations, diagonal_tension, null_prob, min_prob):
    """Learn a lexical translation table for replace-unk.

    Words are whitespace-separated tokens, as in word-level vocabularies. The model is
    fast_align's IBM Model 2 with a diagonal prior, trained by EM; with --links the table is
    the relative frequency of linked word pairs in existing alignments instead.

    \b
    nmtkit align --src train.en --tgt train.de -o lex.tsv
    nmtkit align --src train.en --tgt train.de --links train.links -o lex.tsv
    """
    from nmtkit.data.text import open_output, parallel_lines
    from nmtkit.progress import log, progress, warn
    from nmtkit.tools.aligner import CHUNK_LINKS, count_links, index_corpus, table_entries, train_ibm2
    from nmtkit.tools.lexicon import write_table

    em = "EM training (no --links)"
    check_goes_with(("iterations", not links_path, em), ("diagonal_tension", not links_path, em),
                    ("null_prob", not links_path, em))
    if links_path:
        lines = parallel_lines(src_path, tgt_path, links_path)
        table = count_links(((s.split(), t.split(), links) for s, t, links in lines), str(links_path))
        entries = sorted(((s, t, p) for (s, t), p in table.items() if p >= min_prob), key=lambda e: (e[0], -e[2]))
    else:
        corpus = index_corpus((s.split(), t.split()) for s, t in parallel_lines(src_path, tgt_path))
        log(f"{corpus.pairs:,} sentence pairs, {len(corpus.src_words):,} source and {len(corpus.tgt_words):,} target "
            "words")
        if corpus.too_long:
            lines = ", ".join(map(str, corpus.too_long[:5])) + (", ..." if len(corpus.too_long) > 5 else "")
            warn(f"{src_path} + {tgt_path}: {len(corpus.too_long):,} sentence pair(s) too long to align (over "
                 f"{CHUNK_LINKS:,} possible links, two sides of some 1,400 words; line {lines}) left out of EM")
        with progress() as bar:
            task = bar.add_task("EM", total=iterations * len(corpus.chunks), info="")
            table, t = train_ibm2(corpus, iterations, diagonal_tension, null_prob, on_step=lambda: bar.advance(task))
        entries = table_entries(corpus, table, t, min_prob)
    with open_output(output_path) as out:
        n = write_table(out, entries)
    log(f"wrote {n:,} entries" + (f" to {output_path}" if output_path else ""))
