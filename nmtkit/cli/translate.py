"""nmtkit translate: text in, translations out, one line per input line; the decoding loop ``caption`` shares."""
from __future__ import annotations

import sys
import time
from typing import Callable

import click

from nmtkit.cli.options import Checked
from nmtkit.config import BEAM, DEVICE, LENGTH_A, LENGTH_B, LENGTH_PENALTY, POSITIVE, THREADS
from nmtkit.errors import NmtkitError

#: the options of every command that decodes lines with a model (``translate``, ``caption``)
DECODING_OPTIONS = [
    click.option("-m", "--model", "model_path", required=True, type=click.Path(dir_okay=False), help="checkpoint (best.pt)"),
    click.option("-i", "--input", "input_path", type=click.Path(dir_okay=False), help="input file [default: stdin]"),
    click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False),
                 help="output file, written atomically [default: stdout]"),
    click.option("-b", "--beam", "beam", type=Checked(int, BEAM), default=5, show_default=True, help="beam size"),
    click.option("--greedy", is_flag=True, help="greedy decoding (same as --beam 1)"),
    click.option("--n-best", type=Checked(int, BEAM), default=1, show_default=True,
                 help="write the K best: 'LINE ||| TEXT ||| SCORE' lines"),
    click.option("--length-penalty", type=Checked(float, LENGTH_PENALTY), default=1.0, show_default=True,
                 help="rank finished hypotheses by log-prob / length^alpha (0: raw log-prob)"),
    click.option("--batch-size", type=Checked(int, POSITIVE), default=32, show_default=True,
                 help="inputs per batch (sorted by length)"),
    click.option("--attention-out", type=click.Path(dir_okay=False), help="write tokens and attention weights to this HDF5 file"),
    click.option("--device", type=Checked(str, DEVICE), default="auto", show_default=True, help="cpu, cuda, cuda:N or auto"),
    click.option("--precision", type=click.Choice(["fp32", "bf16", "int8"]), default="fp32", show_default=True,
                 help="arithmetic: fp32; bf16 (autocast: GPUs, CPUs with AVX512-BF16); int8 (quantised linear layers, CPU)"),
    click.option("--threads", type=Checked(int, THREADS), default=0, help="CPU threads (0: PyTorch's default)"),
    click.option("--flush", is_flag=True, help="decode and write each line as soon as it arrives, to serve a pipe as "
                                               "a co-process [default when stdin is a terminal]"),
]


def decoding_options(command: Callable) -> Callable:
    """Add :data:`DECODING_OPTIONS` to a command."""
    for option in reversed(DECODING_OPTIONS):
        command = option(command)
    return command


@click.command("translate")
@decoding_options
@click.option("--max-len-a", type=Checked(float, LENGTH_A), default=1.5, show_default=True, help="output length limit a·|x| + b: a")
@click.option("--max-len-b", type=Checked(int, LENGTH_B), default=10, show_default=True, help="output length limit a·|x| + b: b")
@click.option("--max-input-len", type=Checked(int, POSITIVE), default=250, show_default=True, help="truncate longer inputs (tokens), with a warning")
@click.option("--attention-layer", type=Checked(int, POSITIVE),
              help="with --attention-out, Transformers: the decoder layer whose attention is written [default: last]")
@click.option("--attention-head", type=Checked(int, POSITIVE),
              help="with --attention-out, Transformers: the head whose attention is written [default: their mean]")
def command(max_len_a, max_len_b, max_input_len, attention_layer, attention_head, **options):
    """Translate text with a trained model.

    Exactly one output line per input line: an empty input line gives an empty output line,
    an over-long line is truncated with a warning, and a line of invalid UTF-8 gives an empty
    output line, an error naming the line, and exit code 1 once everything is written.
    """
    from nmtkit.progress import log
    from nmtkit.search.sources import TextSource

    if (attention_layer or attention_head) and not options["attention_out"]:
        raise NmtkitError("--attention-layer and --attention-head go with --attention-out", exit_code=2)

    def source(loaded, name):
        loaded.model.choose_attention(attention_layer, attention_head)
        return TextSource(loaded.text_vocab("src"), max_input_len, name)

    text = decode(source, max_len_a=max_len_a, max_len_b=max_len_b, **options)
    if text.truncated:
        log(f"{text.truncated} line(s) truncated to {max_input_len} tokens")


def decode(make_source, model_path, input_path, output_path, beam, greedy, n_best, length_penalty, batch_size,
           attention_out, device, precision, threads, flush, max_len_a=1.5, max_len_b=10, chunk_size=10_000,
           verbs=("translating", "translated"), lines=None):
    """Decode the lines of ``input_path`` (or stdin) with a checkpoint, one output line (or ``n_best``) per input
    line; ``make_source(loaded, name)`` gives the :class:`~nmtkit.search.sources.Source` that turns lines into the
    model's inputs (``lines``, if given, are read instead of the input); ``verbs`` name the work in progress and
    done. Returns the source; raises an error naming the unusable lines once everything is written."""
    import torch

    from nmtkit.data.text import check_readable, open_output
    from nmtkit.device import pick_device
    from nmtkit.inference import load_model
    from nmtkit.progress import log, progress
    from nmtkit.search.attention_file import open_attention
    from nmtkit.search.precision import for_inference
    from nmtkit.search.translator import SearchOptions, Translator

    if greedy:
        beam = 1
    if n_best > beam:
        raise NmtkitError(f"--n-best: expects at most the beam size ({beam}), got {n_best}", exit_code=2)
    if threads > 0:
        torch.set_num_threads(threads)
    dev = pick_device(device)
    loaded = load_model(model_path, dev)
    name = input_path or "<stdin>"
    source = make_source(loaded, name)
    model, arithmetic = for_inference(loaded.model, precision, dev)
    opts = SearchOptions(beam, n_best, max_len_a, max_len_b, length_penalty, batch_size, attention=bool(attention_out))
    if lines is not None:
        stream = lines
    else:
        stream = open(check_readable(input_path, allow_empty=True), "rb") if input_path else sys.stdin.buffer
    writer = open_attention(attention_out, arch=loaded.config["arch"], model=str(model_path), input=name)
    interactive = flush or (not input_path and sys.stdin.isatty())
    translator = Translator(model, source, loaded.tgt_vocab, opts, dev, chunk_size=1 if interactive else chunk_size,
                            attention_out=writer)
    start, lines = time.perf_counter(), 0
    try:
        with open_output(output_path) as out, progress() as bar, arithmetic:
            task = bar.add_task(verbs[0], total=None, info="")
            for result in translator.translate(stream, on_batch=lambda k: bar.advance(task, k)):
                lines += 1
                if n_best > 1:
                    for text, score in zip(result.texts, result.scores):
                        out.write(f"{result.index} ||| {text} ||| {score:.4f}\n")
                else:
                    out.write(result.texts[0] + "\n")
                if not output_path:
                    out.flush()
        if writer:
            writer.close()
    except BaseException:
        if writer:
            writer.abort()
        raise
    finally:
        if input_path and lines is None:
            stream.close()
    seconds = time.perf_counter() - start
    log(f"{verbs[1]} {lines} lines in {seconds:.1f} s ({lines / max(seconds, 1e-9):.1f} lines/s, model loading excluded)")
    if source.invalid:
        numbers = ", ".join(map(str, source.invalid[:10])) + (" ..." if len(source.invalid) > 10 else "")
        raise NmtkitError(f"{name}: {len(source.invalid)} line(s) {source.problem} (line {numbers}); "
                          "each got an empty output line")
    return source
