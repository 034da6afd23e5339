"""nmtkit translate: text in, translations out, one line per input line."""
from __future__ import annotations

import sys
import time

import click

from nmtkit.cli.options import Checked
from nmtkit.config import BEAM, DEVICE, LENGTH_A, LENGTH_B, LENGTH_PENALTY, POSITIVE, THREADS
from nmtkit.errors import NmtkitError


@click.command("translate")
@click.option("-m", "--model", "model_path", required=True, type=click.Path(dir_okay=False), help="checkpoint (best.pt)")
@click.option("-i", "--input", "input_path", type=click.Path(dir_okay=False), help="input file [default: stdin]")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False),
              help="output file, written atomically [default: stdout]")
@click.option("-b", "--beam", "beam", type=Checked(int, BEAM), default=5, show_default=True, help="beam size")
@click.option("--greedy", is_flag=True, help="greedy decoding (same as --beam 1)")
@click.option("--n-best", type=Checked(int, BEAM), default=1, show_default=True, help="write the K best: 'LINE ||| TEXT ||| SCORE' lines")
@click.option("--length-penalty", type=Checked(float, LENGTH_PENALTY), default=1.0, show_default=True,
              help="rank finished hypotheses by log-prob / length^alpha (0: raw log-prob)")
@click.option("--max-len-a", type=Checked(float, LENGTH_A), default=1.5, show_default=True, help="output length limit a·|x| + b: a")
@click.option("--max-len-b", type=Checked(int, LENGTH_B), default=10, show_default=True, help="output length limit a·|x| + b: b")
@click.option("--batch-size", type=Checked(int, POSITIVE), default=32, show_default=True, help="sentences per batch (sorted by length)")
@click.option("--max-input-len", type=Checked(int, POSITIVE), default=250, show_default=True, help="truncate longer inputs (tokens), with a warning")
@click.option("--attention-out", type=click.Path(dir_okay=False), help="write tokens and attention weights to this HDF5 file")
@click.option("--attention-layer", type=Checked(int, POSITIVE),
              help="with --attention-out, Transformers: the decoder layer whose attention is written [default: last]")
@click.option("--attention-head", type=Checked(int, POSITIVE),
              help="with --attention-out, Transformers: the head whose attention is written [default: their mean]")
@click.option("--device", type=Checked(str, DEVICE), default="auto", show_default=True, help="cpu, cuda, cuda:N or auto")
@click.option("--precision", type=click.Choice(["fp32", "bf16", "int8"]), default="fp32", show_default=True,
              help="arithmetic: fp32; bf16 (autocast: GPUs, CPUs with AVX512-BF16); int8 (quantised linear layers, CPU)")
@click.option("--threads", type=Checked(int, THREADS), default=0, help="CPU threads (0: PyTorch's default)")
@click.option("--flush", is_flag=True, help="translate and write each line as soon as it arrives, to serve a pipe as "
                                            "a co-process [default when stdin is a terminal]")
def command(model_path, input_path, output_path, beam, greedy, n_best, length_penalty, max_len_a, max_len_b,
            batch_size, max_input_len, attention_out, attention_layer, attention_head, device, precision, threads, flush):
    """Translate text with a trained model.

    Exactly one output line per input line: an empty input line gives an empty output line,
    an over-long line is truncated with a warning, and a line of invalid UTF-8 gives an empty
    output line, an error naming the line, and exit code 1 once everything is written.
    """
    import torch

    from nmtkit.data.text import check_readable, open_output
    from nmtkit.device import pick_device
    from nmtkit.inference import load_model
    from nmtkit.progress import log, progress
    from nmtkit.search.attention_file import open_attention
    from nmtkit.search.precision import for_inference
    from nmtkit.search.translator import SearchOptions, Translator

    if (attention_layer or attention_head) and not attention_out:
        raise NmtkitError("--attention-layer and --attention-head go with --attention-out", exit_code=2)
    if greedy:
        beam = 1
    if n_best > beam:
        raise NmtkitError(f"--n-best: expects at most the beam size ({beam}), got {n_best}", exit_code=2)
    if threads > 0:
        torch.set_num_threads(threads)
    dev = pick_device(device)
    loaded = load_model(model_path, dev)
    loaded.model.choose_attention(attention_layer, attention_head)
    model, arithmetic = for_inference(loaded.model, precision, dev)
    opts = SearchOptions(beam, n_best, max_len_a, max_len_b, length_penalty, batch_size, attention=bool(attention_out))
    name = input_path or "<stdin>"
    stream = open(check_readable(input_path, allow_empty=True), "rb") if input_path else sys.stdin.buffer
    writer = open_attention(attention_out, arch=loaded.config["arch"], model=str(model_path), input=name)
    interactive = flush or (not input_path and sys.stdin.isatty())
    translator = Translator(model, loaded.text_vocab("src"), loaded.tgt_vocab, opts, dev, max_input_len,
                            chunk_size=1 if interactive else 10_000, attention_out=writer, name=name)
    start, lines = time.perf_counter(), 0
    try:
        with open_output(output_path) as out, progress() as bar, arithmetic:
            task = bar.add_task("translating", total=None, info="")
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
        if input_path:
            stream.close()
    seconds = time.perf_counter() - start
    log(f"translated {lines} lines in {seconds:.1f} s ({lines / max(seconds, 1e-9):.1f} lines/s, model loading excluded)")
    if translator.truncated:
        log(f"{translator.truncated} line(s) truncated to {max_input_len} tokens")
    if translator.invalid:
        lines = ", ".join(map(str, translator.invalid[:10])) + (" ..." if len(translator.invalid) > 10 else "")
        raise NmtkitError(f"{name}: {len(translator.invalid)} line(s) of invalid UTF-8 (line {lines}); "
                          "each got an empty output line")
