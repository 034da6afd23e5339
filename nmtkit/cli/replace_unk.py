"""nmtkit replace-unk: replace <unk> in translations using the attention weights."""
from __future__ import annotations

import sys

import click

from nmtkit.cli.paths import Command, ReadFile, WriteFile


@click.command("replace-unk", cls=Command)
@click.option("--src", "src_path", required=True, type=ReadFile(), help="the source file that was translated")
@click.option("--attention", "attention_path", required=True, type=ReadFile(),
              help="the attention file of that run (translate --attention-out)")
@click.option("--dict", "dict_path", type=ReadFile(),
              help="lexical table (nmtkit align, fast_align -p, eflomal priors, or 'src tgt' pairs); "
                   "without it every <unk> copies its source word")
@click.option("-i", "--input", "hyp_path", type=ReadFile(stdin=True), help="translations [default: stdin]")
@click.option("-o", "--output", "output_path", type=WriteFile(),
              help="output file, written atomically [default: stdout]")
def command(src_path, attention_path, dict_path, hyp_path, output_path):
    """Replace each <unk> by the translation of its most attended source word, or a copy of it.

    \b
    nmtkit translate -m best.pt --attention-out attn.h5 < test.en > hyp.de
    nmtkit replace-unk --src test.en --attention attn.h5 --dict lex.tsv < hyp.de > hyp.unk.de
    """
    from nmtkit.data.text import check_readable, decode_line, iter_lines, open_output, read_lines, strip_newline
    from nmtkit.progress import log
    from nmtkit.search.attention_file import AttentionFile
    from nmtkit.tools.lexicon import load_lexicon
    from nmtkit.tools.replace_unk import replace_file

    sources = read_lines(check_readable(src_path, allow_empty=True, stream=True))
    lexicon = load_lexicon(dict_path) if dict_path else {}
    if hyp_path:
        hyps = iter_lines(check_readable(hyp_path, allow_empty=True, stream=True))
    else:
        hyps = (decode_line(strip_newline(raw), "<stdin>", n) for n, raw in enumerate(sys.stdin.buffer, 1))
    with AttentionFile(check_readable(attention_path)) as attention:
        lines, counts = replace_file(hyps, sources, attention, lexicon, hyp_path or "<stdin>", src_path)
        with open_output(output_path) as out:
            for line in lines:
                out.write(line + "\n")
    log(f"replaced {counts.from_dict + counts.copied} <unk> in {counts.lines} lines: "
        f"{counts.from_dict} from the dictionary, {counts.copied} copied")
