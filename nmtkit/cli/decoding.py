"""What the commands that decode lines with a model (``translate``, ``caption``) share: their decoding options,
mapped onto :class:`~nmtkit.decoding.DecodeSettings`, and the loop that reads their input lines, decodes them with a
:class:`~nmtkit.decoding.Decoder` and writes one output (or n-best) per line."""
from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, BinaryIO, Callable, Iterable, Iterator, Optional, Sequence

import click

from nmtkit.cli.options import Checked, given_options, setting
from nmtkit.cli.paths import ReadFile, WriteFile
from nmtkit.config import DEVICE
from nmtkit.errors import NmtkitError

if TYPE_CHECKING:
    from nmtkit.decoding import Decoder, DecodeSettings, SourceMaker
    from nmtkit.search.translator import LineResult

#: options of decoding that ``serve`` takes too
DEVICE_OPTION = click.option("--device", type=Checked(str, DEVICE), default="auto", show_default=True,
                             help="cpu, cuda, cuda:N, mps or auto")
PRECISION = click.option("--precision", type=click.Choice(["fp32", "bf16", "int8"]), default="fp32", show_default=True,
                         help="arithmetic: fp32 (TF32 matrix products on CUDA GPUs that have them); bf16 (autocast: "
                              "GPUs, CPUs with AVX512-BF16); int8 (quantised linear layers, CPU)")
COMPILE = click.option("--compile", is_flag=True,
                       help="compile the decoding step with torch.compile: faster steps after a compilation of seconds "
                            "to a minute, which translate and caption pay at every run (for very long inputs) and "
                            "serve once, before it listens (docs/translate.md)")

#: the options of every command that decodes lines with a model (``translate``, ``caption``)
DECODING_OPTIONS = [
    click.option("-m", "--model", "model_paths", required=True, multiple=True, type=ReadFile(),
                 help="checkpoint (best.pt); several -m: an ensemble, their log-probabilities averaged at each step"),
    click.option("--weights", type=str, metavar="W1,W2,...",
                 help="an ensemble's weights, one per -m, normalised to sum to 1 [default: equal]"),
    click.option("--attention-model", type=setting("attention_model"), default=1, show_default=True,
                 help="with --attention-out and an ensemble: the model (1 = the first -m) whose attention is written"),
    click.option("-o", "--output", "output_path", type=WriteFile(),
                 help="output file, written atomically [default: stdout]"),
    click.option("-b", "--beam", "beam", type=setting("beam"), default=5, show_default=True, help="beam size"),
    click.option("--greedy", is_flag=True, help="greedy decoding (same as --beam 1)"),
    click.option("--n-best", type=setting("n_best"), default=1, show_default=True,
                 help="write the K best: 'LINE ||| TEXT ||| logprob= L confidence= C ||| SCORE' lines (Moses')"),
    click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
                 help="text: one translation a line (--n-best: 'LINE ||| TEXT ||| FEATURES ||| SCORE' lines); json: "
                      "one JSON object a line, the line's n-best outputs with their scores and confidence"),
    click.option("--length-penalty", type=setting("length_penalty"), default=1.0, show_default=True,
                 help="rank finished hypotheses by log-prob / length^alpha (0: raw log-prob)"),
    click.option("--batch-size", type=setting("batch_size"), default=32, show_default=True,
                 help="inputs per batch (sorted by length)"),
    click.option("--sampling", is_flag=True,
                 help="draw each output token from the model's distribution instead of searching (one output a line; "
                      "e.g. for back-translation)"),
    click.option("--sampling-topk", type=setting("sampling_topk"),
                 help="with --sampling: draw from the K most probable tokens only (0: all) [default: 0]"),
    click.option("--temperature", type=setting("temperature"),
                 help="with --sampling: divide the log-probabilities by T (above 1 flatter, below 1 sharper) "
                      "[default: 1.0]"),
    click.option("--seed", type=setting("seed"),
                 help="with --sampling: the random seed (the same draws for the same seed, input, batch size, "
                      "--flush and device) [default: 1]"),
    click.option("--prefix-file", type=ReadFile(), metavar="FILE",
                 help="line i of FILE is a target prefix that the output of input line i starts with (tokenised with "
                      "the target vocabulary); the search continues after it; an empty line: no prefix"),
    click.option("--constraints", "constraints_file", type=ReadFile(), metavar="FILE",
                 help="line i of FILE is a JSON list of target phrases that the output of input line i must contain "
                      "(e.g. [\"Dialog\", \"OK button\"]; empty line or []: none): lexically constrained beam "
                      "search with dynamic beam allocation"),
    click.option("--attention-out", type=WriteFile(stdout=False),
                 help="write tokens and attention weights to this HDF5 file (a file: not -, a pipe or a device)"),
    DEVICE_OPTION,
    PRECISION,
    click.option("--threads", type=setting("threads"), default=0, show_default=True,
                 help="CPU threads (0: PyTorch's default)"),
    COMPILE,
    click.option("--flush", is_flag=True, help="decode and write each line as soon as it arrives, to serve a pipe as "
                                               "a co-process [default when stdin is a terminal]"),
]


#: the option naming the weights of the CNN that makes image features (``caption``; ``translate`` of multimodal models)
CNN_WEIGHTS = click.option("--cnn-weights", type=ReadFile(), metavar="FILE",
                           help="the CNN weights the training features came from (if preprocess had --cnn-weights "
                                "and the file has moved; checked by its SHA-256)")


def decoding_options(command: Callable) -> Callable:
    """Add :data:`DECODING_OPTIONS` to a command."""
    for option in reversed(DECODING_OPTIONS):
        command = option(command)
    return command


def check_same_length(files: Sequence[tuple[str, str]]) -> None:
    """Several files read side by side (option, path: the inputs first) must have as many lines each: else a one-line
    error naming the first that has not as many as the first input, by its option."""
    from nmtkit.data.text import check_readable, count_lines

    (_, first), *others = files
    lines = count_lines(check_readable(first, allow_empty=True))
    for option, path in others:
        count = count_lines(check_readable(path, allow_empty=True))
        if count != lines:
            raise NmtkitError(f"{option} {path}: {count} line(s), but the input {first} has {lines}; the files read "
                              "side by side must have as many lines each", exit_code=2)


def input_lines(paths: Sequence[str], fields: bool, files: ExitStack) -> Iterable:
    """The lines to decode: those of stdin or the one input (their TAB-separated fields with ``fields``), or the
    lines of several inputs side by side (one field each; a one-line error once one ends before the others: inputs
    that are pipes cannot be counted first); ``files`` closes what is opened."""
    from nmtkit.data.text import check_readable

    opened = [files.enter_context(open(check_readable(p, allow_empty=True, stream=True), "rb")) for p in paths] or [
        sys.stdin.buffer]
    if fields:
        return (tuple(raw.split(b"\t")) for raw in opened[0])
    if len(opened) > 1:
        return with_fields(opened[0], [("-i", path) for path in paths[1:]], files, opened[1:])
    return opened[0]


def with_fields(lines: Iterable, files_by_option: Sequence[tuple[str, str]], files: ExitStack,
                opened_files: Sequence[BinaryIO] = ()) -> Iterator[tuple]:
    """Each line's fields with, after them, the line of each file beside it (``(option, path)``: a prefix file, a
    constraints file, another input; ``opened_files``: those files, if opened already); a one-line error once a
    file and the input differ in length (``files`` closes them)."""
    from nmtkit.data.text import check_readable
    from nmtkit.search.sources import fields_of

    opened = [(option, path, file) for (option, path), file in zip(files_by_option, opened_files or [
        files.enter_context(open(check_readable(path, allow_empty=True, stream=True), "rb"))
        for _, path in files_by_option])]
    count = 0
    for count, line in enumerate(lines, 1):
        extra = []
        for option, path, file in opened:
            field = file.readline()
            if not field:
                raise NmtkitError(f"{option} {path}: {count - 1} line(s), fewer than the input's", exit_code=2)
            extra.append(field)
        yield (*fields_of(line), *extra)
    for option, path, file in opened:
        if file.readline():
            raise NmtkitError(f"{option} {path}: more lines than the input's {count}", exit_code=2)


def parse_weights(text: Optional[str]) -> Optional[list[float]]:
    """``--weights``: numbers separated by commas or spaces."""
    if not text:
        return None
    try:
        return [float(w) for w in text.replace(",", " ").split()]
    except ValueError:
        raise NmtkitError(f"--weights: expects numbers separated by commas, got {text!r}", exit_code=2) from None


def formatted(result: LineResult, n_best: int, output_format: str = "text", name: str = "<stdin>") -> str:
    """What ``translate`` writes for one input line: its best output's text (and a newline); with ``n_best`` above
    1, one ``INDEX ||| TEXT ||| logprob= L confidence= C ||| SCORE`` line per output, the fields of Moses' n-best
    lists (named features, then the score that ranks them; L is the log-probability, C its mean per token), and
    `` ||| ALIGNMENT`` after them where the result has alignments (as Moses puts them; a warning naming line
    ``name``:N where a text holds ``|||``); or, in ``json``, one object with the outputs and their numbers."""
    if output_format == "json":
        line = {"index": result.index, "outputs": result.outputs(), **result.flags()}
        return json.dumps(line, ensure_ascii=False) + "\n"
    if n_best == 1:
        return result.texts[0] + "\n"
    if any(" ||| " in f" {text} " for text in result.texts):
        from nmtkit.progress import warn

        warn(f"{name}:{result.index + 1}: an output holds '|||', which its n-best lines also separate fields with: "
             "--output-format json keeps it apart")
    links = [f" ||| {alignment}" for alignment in result.alignments] if result.alignments else [""] * len(result.texts)
    return "".join(f"{result.index} ||| {text} ||| logprob= {logprob:.4f} confidence= {confidence:.4f} ||| {score:.4f}"
                   f"{link}\n" for text, score, logprob, confidence, link in
                   zip(result.texts, result.scores, result.logprobs, result.confidence, links))


def settings_of(options: dict, **more) -> DecodeSettings:
    """The :class:`~nmtkit.decoding.DecodeSettings` that a command's :data:`DECODING_OPTIONS` (and ``more``
    settings) ask for; options that go with another given without it are a one-line error."""
    from nmtkit.decoding import DecodeSettings

    o = dict(options)
    sampling = {"sampling_topk": 0, "temperature": 1.0, "seed": 1}
    if not o["sampling"] and any(o[name] is not None for name in sampling):
        raise NmtkitError("--sampling-topk, --temperature and --seed go with --sampling", exit_code=2)
    searching = given_options("beam", "greedy", "length_penalty")
    if searching[:2] == ["--beam", "--greedy"]:
        raise NmtkitError("--beam: --greedy searches with one hypothesis (as --beam 1); give one or the other",
                          exit_code=2)
    if o["sampling"] and searching:
        raise NmtkitError(f"{searching[0]}: --sampling draws its outputs instead of searching", exit_code=2)
    weights = parse_weights(o.pop("weights"))
    beam = o.pop("beam")
    beam = 1 if o.pop("greedy") else beam
    for name, default in sampling.items():
        o[name] = default if o[name] is None else o[name]
    for name in ("model_paths", "output_path", "attention_out", "flush", "output_format", "prefix_file",
                 "constraints_file"):
        o.pop(name)
    return DecodeSettings(models=tuple(options["model_paths"]), weights=None if weights is None else tuple(weights),
                          beam=beam, attention=bool(options["attention_out"]), prefix=bool(options["prefix_file"]),
                          constraints=bool(options["constraints_file"]), **o, **more)


def decode(sources: SourceMaker, options: dict, input_paths: Sequence[str] = (), fields: bool = False,
           lines: Optional[Iterable] = None, chunk_size: int = 10_000, verbs=("translating", "translated"),
           alignments_path: Optional[str] = None, name: Optional[str] = None, **more) -> Decoder:
    """Decode the lines of ``input_paths`` (or stdin; several inputs side by side, one field each; with ``fields``,
    the TAB-separated fields of one input's lines; ``lines``, if given, instead) with the checkpoints and settings
    of a command's :data:`DECODING_OPTIONS` (``options``, and ``more`` settings), one output line (or ``n_best``) per
    input line, into ``-o`` or stdout, the attention into ``--attention-out``, the best outputs' word alignments into
    ``alignments_path`` (``--alignments``; one line per input line), messages naming the input ``name`` (default: the
    input paths, or ``<stdin>``); ``sources(loaded, model_path)`` turns
    lines into a model's inputs (see :class:`~nmtkit.decoding.Decoder`); ``verbs`` name the work in progress and
    done. Returns the decoder; raises an error naming the unusable lines once everything is written."""
    from nmtkit.data.text import is_stream, open_output
    from nmtkit.decoding import Decoder
    from nmtkit.progress import NAMED_LINES, log, progress
    from nmtkit.search.attention_file import open_attention

    settings = settings_of(options, alignments=bool(alignments_path), **more)
    settings.check()
    guide_files = [(option, path) for option, path in (("--prefix-file", options["prefix_file"]),
                                                       ("--constraints", options["constraints_file"])) if path]
    side_by_side = [*(("-i", path) for path in input_paths), *guide_files] if input_paths else []
    if len(side_by_side) > 1 and not any(is_stream(path) for _, path in side_by_side):  # (stdin, pipes: as read)
        check_same_length(side_by_side)
    output_path, attention_out = options["output_path"], options["attention_out"]
    name = name or " + ".join(input_paths) or "<stdin>"
    decoder = Decoder(settings, sources, name, (f"--prefix-file {options['prefix_file']}",
                                                f"--constraints {options['constraints_file']}"))
    interactive = options["flush"] or (not input_paths and sys.stdin.isatty())
    start, count, not_finite, unusable, truncated = time.perf_counter(), 0, [], [], 0
    with ExitStack() as files:
        stream = lines if lines is not None else input_lines(input_paths, fields, files)
        if guide_files:
            stream = with_fields(stream, guide_files, files)
        writer = open_attention(attention_out, arch=decoder.loaded.config["arch"], model=" + ".join(settings.models),
                                input=name, inputs=list(decoder.loaded.model.inputs))
        try:
            with open_output(output_path) as out, progress() as bar, ExitStack() as aligned:
                # (the alignments in place before the output, as the attention file: an output there has its own)
                links = aligned.enter_context(open_output(alignments_path)) if alignments_path else None
                task = bar.add_task(verbs[0], total=None, info="")
                for result in decoder.translate(stream, writer, lambda k: bar.advance(task, k),
                                                1 if interactive else chunk_size):
                    count += 1
                    if result.not_finite:
                        not_finite.append(result.index + 1)
                    if result.unusable:
                        unusable.append(result.index + 1)
                    truncated += result.truncated
                    out.write(formatted(result, settings.n_best, options["output_format"], name))
                    if links and result.alignments is not None:
                        links.write(result.alignments[0] + "\n")
                    if not output_path:
                        out.flush()
                if writer:  # (before the output is in place: an output there always has its attention file)
                    writer.close()
        except BaseException:
            if writer:
                writer.abort()
            raise
    seconds = time.perf_counter() - start
    log(f"{verbs[1]} {count} lines in {seconds:.1f} s ({count / max(seconds, 1e-9):.1f} lines/s, model loading excluded)")
    if truncated:
        log(f"{truncated} line(s) with an input or prefix cut at a length limit (the warnings above name "
            f"{'them' if truncated <= NAMED_LINES else f'the first {NAMED_LINES} of each kind'})")
    problems = [f"{len(lines)} line(s) {problem} (line {', '.join(map(str, lines[:10]))}{' ...' if len(lines) > 10 else ''})"
                for lines, problem in ((unusable, decoder.source.problem),
                                       (not_finite, "whose scores the model gave as NaN or infinite")) if lines]
    if problems:
        raise NmtkitError(f"{name}: {'; '.join(problems)}; each got an empty output line")
    return decoder
