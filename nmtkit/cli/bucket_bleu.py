"""nmtkit bucket-bleu: BLEU of several systems by source-sentence length."""
from __future__ import annotations

import click

from nmtkit.cli.options import Checked, check_goes_with, named_systems
from nmtkit.cli.paths import Command, ReadFile, WriteFile
from nmtkit.config import Range


@click.command("bucket-bleu", cls=Command, more_inputs=lambda params: [
    ("--hyp", path) for files in named_systems(params["hyps"], "--hyp").values() for path in files])
@click.option("--src", "src_path", required=True, type=ReadFile(), help="the source file")
@click.option("--ref", "ref_paths", required=True, multiple=True, type=ReadFile(),
              help="reference file (repeat for several references)")
@click.option("--hyp", "hyps", required=True, multiple=True, metavar="NAME=FILE",
              help="a system's translations; repeat for each system, the first is the baseline of the gains")
@click.option("--buckets", default="10,20,30,40,50", show_default=True,
              help="upper bounds of the length buckets; longer sentences form a last bucket")
@click.option("--tokenize", default=None, metavar="NAME",
              help="count source tokens of this sacrebleu tokenizer (13a, intl, zh, char, ...) instead of "
                   "whitespace-separated words")
@click.option("--bleu-tokenize", default=None, metavar="NAME", help="sacrebleu's BLEU tokenizer [default: 13a]")
@click.option("--csv", "csv_path", type=WriteFile(), help="also write the table as CSV (- for stdout, instead of "
                                                                 "the table)")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
@click.option("--plot", "plot_path", type=WriteFile(), help="draw the figure: FILE.png, .pdf or .svg")
@click.option("--title", default="BLEU by source sentence length", show_default=True, help="the figure's title")
@click.option("--confidence", is_flag=True,
              help="95% bootstrap intervals of every BLEU and gain, and each gain's paired bootstrap p-value")
@click.option("--bootstrap", "samples", type=Checked(int, Range(10, 100_000)), default=1000, show_default=True,
              help="with --confidence: bootstrap resamples of each bucket")
def command(src_path, ref_paths, hyps, buckets, tokenize, bleu_tokenize, csv_path, as_json, plot_path, title,
            confidence, samples):
    """BLEU, output length and gain over the first system, by source-sentence length.

    \b
    nmtkit bucket-bleu --src test.en --ref test.de --hyp rnnsearch=base.de --hyp target-attn=tatt.de \\
        --buckets 10,20,30,40,50 --plot buckets.png
    """
    import csv
    import json
    import sys

    from nmtkit.data.text import atomic_output, check_readable, read_lines
    from nmtkit.errors import NmtkitError
    from nmtkit.metrics.text import check_tokenizer
    from nmtkit.tools.bucket_bleu import bucket_bleu, parse_buckets, plot_buckets
    from nmtkit.tools.figures import figure_format

    check_goes_with(("samples", confidence, "--confidence"))
    if as_json and csv_path == "-":
        raise NmtkitError("--csv -: --json prints to the standard output too, and the two would mix; give --csv a file",
                          exit_code=2)
    bounds = parse_buckets(buckets)
    for option, name in (("--tokenize", tokenize), ("--bleu-tokenize", bleu_tokenize)):
        if name is not None:
            check_tokenizer(name, option)
    if plot_path:
        figure_format(plot_path, "--plot")
    systems = {name: files[0] for name, files in named_systems(hyps, "--hyp").items()}
    sources = read_lines(check_readable(src_path, stream=True))
    texts = {path: read_lines(check_readable(path, allow_empty=True, stream=True)) for path in [*ref_paths, *systems.values()]}
    for path, lines in texts.items():
        if len(lines) != len(sources):
            raise NmtkitError(f"{path} has {len(lines)} lines but the source {src_path} has {len(sources)}")
    result = bucket_bleu(sources, [texts[p] for p in ref_paths], {n: texts[p] for n, p in systems.items()},
                         bounds, tokenize, bleu_tokenize, samples if confidence else 0)

    names = list(systems)
    columns = ("bleu", "bleu_ci", "length") if confidence else ("bleu", "length")
    gains = ("gain", "gain_ci", "gain_p") if confidence else ("gain",)
    title_of = {"bleu": "BLEU", "bleu_ci": "BLEU ±", "length": "length", "gain": "gain", "gain_ci": "gain ±",
                "gain_p": "gain p"}
    header = ["bucket", "sentences"] + [f"{title_of[k]} {n}" for n in names for k in columns] + \
        [f"{title_of[k]} {n}" for n in names[1:] for k in gains]
    fmt = lambda v, k: "" if v is None else f"{v:.4f}" if k == "gain_p" else f"{v:.2f}"
    rows = [[b.label, str(b.count)] + [fmt(getattr(b, k)[n], k) for n in names for k in columns] +
            [fmt(getattr(b, k)[n], k) for n in names[1:] for k in gains] for b in result]
    if csv_path:
        with atomic_output(csv_path) as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(rows)
    if as_json:
        json.dump([b.as_dict() for b in result], sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif csv_path != "-":
        from nmtkit.cli.tables import print_table

        print_table(f"BLEU by source length ({'tokens: ' + tokenize if tokenize else 'words'})", header, rows)
    if plot_path:
        plot_buckets(result, plot_path, title, f"{tokenize} tokens" if tokenize else "words")
