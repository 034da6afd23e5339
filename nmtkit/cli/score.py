"""nmtkit score: BLEU, chrF, TER (sacrebleu) of a hypothesis file, or a model's perplexity."""
from __future__ import annotations

import sys

import click

from nmtkit.cli.options import Checked
from nmtkit.config import POSITIVE
from nmtkit.errors import NmtkitError
from nmtkit.metrics.text import METRICS


@click.command("score")
@click.option("--metric", type=click.Choice(METRICS + ("ppl",)), default="bleu", show_default=True)
@click.option("-r", "--ref", "refs", multiple=True, type=click.Path(dir_okay=False),
              help="reference file (repeat for several references)")
@click.option("-i", "--input", "hyp_path", type=click.Path(dir_okay=False), help="hypotheses [default: stdin]")
@click.option("--tokenize", help="sacrebleu tokenizer for BLEU (13a, intl, zh, char, none, ...) [default: 13a]")
@click.option("--lowercase", is_flag=True, help="case-insensitive scoring")
@click.option("-m", "--model", "model_path", type=click.Path(dir_okay=False), help="with --metric ppl: checkpoint")
@click.option("--src", "src_path", type=click.Path(dir_okay=False), help="with --metric ppl: source file")
@click.option("--batch-size", type=Checked(int, POSITIVE), default=64, show_default=True, help="with --metric ppl: sentences per batch")
@click.option("--score-only", is_flag=True, help="print the number only")
def command(metric, refs, hyp_path, tokenize, lowercase, model_path, src_path, batch_size, score_only):
    """Score translations against references, or a model's perplexity on a test set.

    \b
    nmtkit score --metric bleu -r test.de < hyp.de
    nmtkit score --metric ppl -m best.pt --src test.en -r test.de
    """
    from nmtkit.data.text import check_readable, decode_line, read_lines, strip_newline

    if not refs:
        raise NmtkitError("-r/--ref: at least one reference file is required", exit_code=2)
    if metric == "ppl":
        if not (model_path and src_path) or len(refs) != 1:
            raise NmtkitError("--metric ppl needs -m CKPT, --src FILE and one -r FILE", exit_code=2)
        value = _perplexity(model_path, src_path, refs[0], batch_size)
        click.echo(f"{value:.4f}" if score_only else f"PPL = {value:.4f} (Eq. 13; tokens include </s>)")
        return
    references = [read_lines(check_readable(r, allow_empty=True)) for r in refs]
    if hyp_path:
        hyps = read_lines(check_readable(hyp_path, allow_empty=True))
    else:
        hyps = [decode_line(strip_newline(raw), "<stdin>", n) for n, raw in enumerate(sys.stdin.buffer, 1)]
    name = hyp_path or "<stdin>"
    for r, lines in zip(refs, references):
        if len(lines) != len(hyps):
            raise NmtkitError(f"{name} has {len(hyps)} lines but reference {r} has {len(lines)}")
    from nmtkit.metrics.text import corpus_score

    result = corpus_score(metric, hyps, references, tokenize=tokenize, lowercase=lowercase)
    click.echo(f"{result.score:.2f}" if score_only else f"{result.text}\n{result.signature}")


def _perplexity(model_path: str, src_path: str, ref_path: str, batch_size: int) -> float:
    from nmtkit.data.batching import make_batch
    from nmtkit.data.text import check_parallel, read_lines
    from nmtkit.device import pick_device
    from nmtkit.inference import load_model
    from nmtkit.metrics.perplexity import corpus_nll, perplexity

    check_parallel(src_path, ref_path)
    device = pick_device("auto")
    loaded = load_model(model_path, device)
    model = loaded.model
    src = [loaded.text_vocab("src").encode(s) for s in read_lines(src_path)]
    tgt = [loaded.tgt_vocab.encode(t) for t in read_lines(ref_path)]
    order = sorted(range(len(src)), key=lambda i: len(src[i]))
    batches = (make_batch([src[i] for i in order[k:k + batch_size]], [tgt[i] for i in order[k:k + batch_size]])
               for k in range(0, len(order), batch_size))
    return perplexity(*corpus_nll(model, batches, device))
