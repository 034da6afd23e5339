"""nmtkit compare: several systems' scores with bootstrap confidence intervals, and each against the first by paired
bootstrap resampling and paired approximate randomisation; a system may be several files (one per seed)."""
from __future__ import annotations

import click

from nmtkit.cli.options import Checked, check_goes_with, named_systems
from nmtkit.cli.paths import Command, ReadFile, WriteFile
from nmtkit.config import Range
from nmtkit.metrics.text import SACREBLEU_METRICS


def _metrics(text: str) -> list[str]:
    from nmtkit.errors import NmtkitError

    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in SACREBLEU_METRICS]
    if not names or unknown:
        raise NmtkitError(f"--metric: expected some of {', '.join(SACREBLEU_METRICS)} separated by commas, not "
                          f"{text!r}", exit_code=2)
    return list(dict.fromkeys(names))


@click.command("compare", cls=Command, more_inputs=lambda params: [
    ("--sys", path) for files in named_systems(params["systems"], "--sys", several=True).values() for path in files])
@click.option("-r", "--ref", "ref_paths", required=True, multiple=True, type=ReadFile(),
              help="reference file (repeat for several references)")
@click.option("--sys", "systems", required=True, multiple=True, metavar="NAME=FILE[,FILE...]",
              help="a system's output, or its outputs of several seeds separated by commas; repeat for each system, "
                   "the first is the baseline")
@click.option("--metric", "metrics", default="bleu,chrf", show_default=True, metavar="M1,M2,...",
              help=f"metrics, of {', '.join(SACREBLEU_METRICS)}")
@click.option("--tokenize", metavar="NAME", help="sacrebleu tokenizer for BLEU [default: 13a]")
@click.option("--lowercase", is_flag=True, help="case-insensitive scoring")
@click.option("--bootstrap", "samples", type=Checked(int, Range(10, 100_000)), default=1000, show_default=True,
              help="bootstrap resamples (confidence intervals and paired bootstrap)")
@click.option("--trials", type=Checked(int, Range(10, 100_000)), default=10000, show_default=True,
              help="approximate randomisation trials")
@click.option("--seed", type=Checked(int, Range(0, 2**32 - 1)), default=12345, show_default=True,
              help="the random seed of resampling (sacrebleu's default)")
@click.option("--level", type=Checked(float, Range(0, 1, low_open=True, high_open=True)), default=0.05,
              show_default=True, help="significance level of the table's marks")
@click.option("--json", "json_path", type=WriteFile(), metavar="FILE",
              help="also write every figure as JSON (- for stdout, instead of the table)")
@click.option("--csv", "csv_path", type=WriteFile(), metavar="FILE",
              help="also write the table as CSV (- for stdout, instead of the table)")
@click.option("--plot", "plot_path", type=WriteFile(), metavar="FILE",
              help="draw each system's scores with their intervals: FILE.png, .pdf or .svg")
def command(ref_paths, systems, metrics, tokenize, lowercase, samples, trials, seed, level, json_path, csv_path,
            plot_path):
    """Compare systems' outputs: scores with 95% bootstrap confidence intervals, and each system against the first
    by paired bootstrap resampling and paired approximate randomisation (sacrebleu's tests).

    A system given as several files (one per training seed) is reported as the mean ± standard deviation of its
    files' scores; its difference from the baseline is that of the seed means, tested on the same resampled test
    sets for every file, and each pair of files is tested as well.

    \b
    nmtkit compare -r test.de --sys rnnsearch=base.de --sys target-attn=tatt.de --metric bleu,chrf++
    nmtkit compare -r test.de --sys base=b1.de,b2.de,b3.de --sys tatt=t1.de,t2.de,t3.de --json result.json
    """
    from nmtkit.data.text import check_readable, read_lines
    from nmtkit.errors import NmtkitError
    from nmtkit.metrics.significance import compare_systems
    from nmtkit.metrics.text import check_tokenizer, sacrebleu_metric
    from nmtkit.tools.comparison import comparison_rows, plot_comparison, title, write_comparison

    names = _metrics(metrics)
    check_goes_with(("tokenize", "bleu" in names, "--metric bleu"))
    if tokenize is not None:
        check_tokenizer(tokenize)
    if plot_path:
        from nmtkit.tools.figures import figure_format

        figure_format(plot_path, "--plot")
    given = named_systems(systems, "--sys", several=True)
    if len(given) < 2:
        raise NmtkitError("--sys: give at least two systems (the first is the baseline)", exit_code=2)
    references = [read_lines(check_readable(r, stream=True)) for r in ref_paths]
    outputs = {name: [(path, read_lines(check_readable(path, allow_empty=True, stream=True))) for path in files]
               for name, files in given.items()}
    for name, files in outputs.items():
        for path, lines in files:
            if len(lines) != len(references[0]):
                raise NmtkitError(f"--sys {name}: {path} has {len(lines)} lines but the reference {ref_paths[0]} has "
                                  f"{len(references[0])}")
    for path, lines in zip(ref_paths, references):
        if len(lines) != len(references[0]):
            raise NmtkitError(f"-r {path} has {len(lines)} lines but {ref_paths[0]} has {len(references[0])}")
    results = [compare_systems(m, sacrebleu_metric(m, tokenize, lowercase), references, outputs, samples, trials,
                               seed) for m in names]
    write_comparison(results, level, json_path, csv_path)
    if "-" not in (json_path, csv_path):  # (the table would mix with what goes to the standard output)
        from nmtkit.cli.tables import print_table

        for result in results:
            print_table(title(result), *comparison_rows(result, level))
        if any(len(s.runs) > 1 for s in results[0].systems):
            click.echo("several files a system: the tests cover the test set's sampling, not the spread between seeds "
                       "(sd); approximate randomisation pairs the files in the order given")
    if plot_path:
        plot_comparison(results, plot_path)
