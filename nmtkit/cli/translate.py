"""nmtkit translate: text in, translations out, one line per input line; the decoding loop ``caption`` shares."""
from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence

import click

from nmtkit.cli.options import Checked
from nmtkit.config import BEAM, COUNT, DEVICE, LENGTH_A, LENGTH_B, LENGTH_PENALTY, POSITIVE, THREADS, Range
from nmtkit.errors import NmtkitError

if TYPE_CHECKING:
    from nmtkit.inference import LoadedModel
    from nmtkit.search.translator import PostProcess

#: the options of every command that decodes lines with a model (``translate``, ``caption``)
DECODING_OPTIONS = [
    click.option("-m", "--model", "model_paths", required=True, multiple=True, type=click.Path(dir_okay=False),
                 help="checkpoint (best.pt); several -m: an ensemble, their log-probabilities averaged at each step"),
    click.option("--weights", type=str, metavar="W1,W2,...",
                 help="an ensemble's weights, one per -m, normalised to sum to 1 [default: equal]"),
    click.option("--attention-model", type=Checked(int, POSITIVE), default=1, show_default=True,
                 help="with --attention-out and an ensemble: the model (1 = the first -m) whose attention is written"),
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
    click.option("--sampling", is_flag=True,
                 help="draw each output token from the model's distribution instead of searching (one output a line; "
                      "e.g. for back-translation)"),
    click.option("--sampling-topk", type=Checked(int, COUNT),
                 help="with --sampling: draw from the K most probable tokens only (0: all) [default: 0]"),
    click.option("--temperature", type=Checked(float, Range(0, 100, low_open=True)),
                 help="with --sampling: divide the log-probabilities by T (above 1 flatter, below 1 sharper) "
                      "[default: 1.0]"),
    click.option("--seed", type=Checked(int, Range(0, 2**63 - 1)),
                 help="with --sampling: the random seed (the same draws for the same seed, input, batch size, "
                      "--flush and device) [default: 1]"),
    click.option("--attention-out", type=click.Path(dir_okay=False), help="write tokens and attention weights to this HDF5 file"),
    click.option("--device", type=Checked(str, DEVICE), default="auto", show_default=True, help="cpu, cuda, cuda:N or auto"),
    click.option("--precision", type=click.Choice(["fp32", "bf16", "int8"]), default="fp32", show_default=True,
                 help="arithmetic: fp32 (TF32 matrix products on CUDA GPUs that have them); bf16 (autocast: GPUs, "
                      "CPUs with AVX512-BF16); int8 (quantised linear layers, CPU)"),
    click.option("--threads", type=Checked(int, THREADS), default=0, help="CPU threads (0: PyTorch's default)"),
    click.option("--flush", is_flag=True, help="decode and write each line as soon as it arrives, to serve a pipe as "
                                               "a co-process [default when stdin is a terminal]"),
]


#: the option naming the weights of the CNN that makes image features (``caption``; ``translate`` of multimodal models)
CNN_WEIGHTS = click.option("--cnn-weights", type=click.Path(dir_okay=False), metavar="FILE",
                           help="the CNN weights the training features came from (if preprocess had --cnn-weights "
                                "and the file has moved; checked by its SHA-256)")


def decoding_options(command: Callable) -> Callable:
    """Add :data:`DECODING_OPTIONS` to a command."""
    for option in reversed(DECODING_OPTIONS):
        command = option(command)
    return command


@click.command("translate")
@decoding_options
@click.option("-i", "--input", "input_paths", multiple=True, type=click.Path(dir_okay=False),
              help="input file [default: stdin]; a model with several inputs: one -i each, in the order of its inputs")
@click.option("--fields", is_flag=True,
              help="each line of the input holds the model's inputs as TAB-separated fields, in its order")
@click.option("--max-len-a", type=Checked(float, LENGTH_A), default=1.5, show_default=True, help="output length limit a·|x| + b: a")
@click.option("--max-len-b", type=Checked(int, LENGTH_B), default=10, show_default=True, help="output length limit a·|x| + b: b")
@click.option("--max-input-len", type=Checked(int, POSITIVE), default=250, show_default=True, help="truncate longer inputs (tokens), with a warning")
@click.option("--attention-layer", type=Checked(int, POSITIVE),
              help="with --attention-out, Transformers: the decoder layer whose attention is written [default: last]")
@click.option("--attention-head", type=Checked(int, POSITIVE),
              help="with --attention-out, Transformers: the head whose attention is written [default: their mean]")
@CNN_WEIGHTS
@click.option("--features", type=click.Path(dir_okay=False), metavar="FILE",
              help="multimodal models: the image features precomputed, .npy or HDF5 ('features' [lines, grid, D]), "
                   "row i for input line i; the inputs then hold the text fields only")
@click.option("--shortlist", "shortlist_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="restrict each batch's output layer to the most frequent target words and the best translations "
                   "of its source words in FILE, a lexical table (nmtkit align, fast_align -p, eflomal priors)")
@click.option("--shortlist-first", type=Checked(int, COUNT), default=100, show_default=True,
              help="with --shortlist: the N most frequent target words (the first ids of the vocabulary) always in")
@click.option("--shortlist-best", type=Checked(int, POSITIVE), default=100, show_default=True,
              help="with --shortlist: the K best translations of each source word")
@click.option("--edit-cost", type=Checked(float, Range(0)), default=0.0, show_default=True,
              help="post-editing models (preprocess --ape-edits): each edit operation (anything but <keep> and the "
                   "end) costs this much log-probability in the search, so the output changes the MT only where the "
                   "model prefers a change by more; tune it on dev data (large: the MT unchanged)")
@click.option("--replace-unk", is_flag=True,
              help="replace each <unk> of the output by the --dict translation of the source word it attended to "
                   "most, or by that word (word vocabularies; as 'nmtkit replace-unk')")
@click.option("--dict", "dict_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="with --replace-unk: a lexical table (nmtkit align, fast_align -p, eflomal priors, word pairs)")
def command(input_paths, fields, max_len_a, max_len_b, max_input_len, attention_layer, attention_head, cnn_weights,
            features, shortlist_path, shortlist_first, shortlist_best, edit_cost, replace_unk, dict_path, **options):
    """Translate text with a trained model.

    Exactly one output line per input line: an empty input line gives an empty output line,
    an over-long line is truncated with a warning, and a line of invalid UTF-8 gives an empty
    output line, an error naming the line, and exit code 1 once everything is written.
    A model with several inputs (src and mt, src and image paths) reads one -i per input or,
    with --fields, TAB-separated fields.
    """
    from nmtkit.progress import log
    from nmtkit.search.sources import (
        FeatureSource,
        TextSource,
        check_input_count,
        model_sources,
        read_inputs,
        reading_limit,
    )

    if (attention_layer or attention_head) and not options["attention_out"]:
        raise NmtkitError("--attention-layer and --attention-head go with --attention-out", exit_code=2)
    if fields and len(input_paths) > 1:
        raise NmtkitError("--fields: the fields come from one input; give one -i FILE (or none: stdin)", exit_code=2)
    if dict_path and not replace_unk:
        raise NmtkitError("--dict goes with --replace-unk", exit_code=2)
    if edit_cost and shortlist_path:
        raise NmtkitError("--edit-cost: post-editing models decode without --shortlist", exit_code=2)
    texts, replaced = [], []

    def source(loaded, model_path, name):
        inputs = read_inputs(loaded, bool(features))
        if not fields and (len(input_paths) > 1 or len(inputs) > 1):
            check_input_count(loaded, len(input_paths), "-i", ", or their TAB-separated fields with --fields",
                              bool(features))
        names = input_paths if len(input_paths) > 1 else [name] * len(inputs)
        rows = None
        if features:
            from nmtkit.data.images import load_features
            from nmtkit.data.text import count_lines

            count = count_lines(input_paths[0]) if input_paths else None
            rows = FeatureSource(load_features(features, f"--features {features}", count), name=f"--features {features}")
        made = model_sources(loaded, model_path, names, max_input_len, cnn_weights, rows)
        texts.append([s for s in made.sources.values() if isinstance(s, TextSource)])
        return made

    def shortlisted(loaded):
        from nmtkit.search.shortlist import Shortlist, Shortlisted
        from nmtkit.tools.lexicon import load_translations

        stream = loaded.model.inputs[0]
        if stream not in loaded.vocabs:
            raise NmtkitError(f"--shortlist: this {loaded.config['arch']} model's first input ({stream}) is not text",
                              exit_code=2)
        shortlist = Shortlist.from_translations(load_translations(shortlist_path, shortlist_best),
                                                loaded.vocabs[stream], loaded.tgt_vocab, shortlist_first,
                                                shortlist_best, shortlist_path)
        return Shortlisted(loaded.model, shortlist, len(loaded.tgt_vocab), stream)

    def edit_costed(loaded):
        from nmtkit.search.token_costs import TokenCosts, edit_costs

        form = loaded.output_form
        if not form.edits:
            raise NmtkitError(f"--edit-cost: this {loaded.config['arch']} model outputs text, not edit operations (a "
                              "post-editing model's corpus is made with preprocess --ape-edits)", exit_code=2)
        return TokenCosts(loaded.model, edit_costs(len(loaded.tgt_vocab), form.unchanged_ids(loaded.tgt_vocab),
                                                   edit_cost))

    def replacing(loaded):
        replace, counts = unk_replacement(loaded, dict_path, reading_limit(loaded.model, max_input_len)[0])
        replaced.append(counts)
        return replace

    decode(source, input_paths=input_paths, fields=fields, max_len_a=max_len_a, max_len_b=max_len_b,
           attention_choice=(attention_layer, attention_head),
           restrict=shortlisted if shortlist_path else edit_costed if edit_cost else None,
           rewrite=replacing if replace_unk else None, **options)
    truncated = sum(s.truncated for s in texts[0])  # the first model's segmentation
    if truncated:
        log(f"{truncated} line(s) truncated to {texts[0][0].max_input_len} tokens")
    for counts in replaced:
        log(f"replaced {counts.from_dict + counts.copied} <unk> in {counts.lines} outputs: "
            f"{counts.from_dict} from the dictionary, {counts.copied} copied")


def check_same_length(paths: Sequence[str]) -> None:
    """Several inputs read side by side must have as many lines each: else a one-line error naming them."""
    from nmtkit.data.text import check_readable, count_lines

    counts = {path: count_lines(check_readable(path, allow_empty=True)) for path in paths}
    if len(set(counts.values())) > 1:
        given = ", ".join(f"{path} has {n}" for path, n in counts.items())
        raise NmtkitError(f"-i: the inputs must have the same number of lines, but {given}", exit_code=2)


def input_lines(paths: Sequence[str], fields: bool, files: ExitStack) -> Iterable:
    """The lines to decode: those of stdin or the one input (their TAB-separated fields with ``fields``), or the
    lines of several inputs side by side (one field each); ``files`` closes what is opened."""
    from nmtkit.data.text import check_readable

    opened = [files.enter_context(open(check_readable(p, allow_empty=True), "rb")) for p in paths] or [sys.stdin.buffer]
    if fields:
        return (tuple(raw.split(b"\t")) for raw in opened[0])
    return zip(*opened) if len(opened) > 1 else opened[0]


def as_text(loaded: LoadedModel, source) -> Optional[PostProcess]:
    """What turns a model's output into text in its output form, with the line's raw inputs that the form reads
    (e.g. the edit operations of automatic post-editing applied to the MT input), found among the fields that
    ``source`` (the model's :class:`StreamSources`) reads from a line; None where outputs are text."""
    form = loaded.output_form
    if not form.reads:
        return None
    from nmtkit.search.sources import line_text

    fields_of = {stream: source.fields.index(stream) for stream in form.reads}
    return lambda index, fields, output, hypothesis: form.text(
        output, {stream: line_text(index, fields[k]) for stream, k in fields_of.items()})


def unk_replacement(loaded: LoadedModel, dict_path: Optional[str], max_input_len: Optional[int]):
    """``--replace-unk``: what replaces each ``<unk>`` of an output by the dictionary translation of the source word
    it attended to most, or that word (replace-unk's rule, target-target-attention.txt §3.2), and the counts of
    what it replaced. Needs word vocabularies on the first input and the output."""
    from nmtkit.data.vocab import UNK, WordVocab
    from nmtkit.search.ensemble import Ensemble
    from nmtkit.search.sources import line_text
    from nmtkit.tools.lexicon import load_lexicon
    from nmtkit.tools.replace_unk import Counts, replace_unks

    stream = loaded.model.inputs[0]
    if not (isinstance(loaded.vocabs.get(stream), WordVocab) and isinstance(loaded.tgt_vocab, WordVocab)):
        raise NmtkitError(f"--replace-unk: needs word vocabularies (preprocess --vocab word:N) on the model's first "
                          f"input ({stream}) and its output", exit_code=2)
    if isinstance(loaded.model, Ensemble) and any(own != name for streams in loaded.model.streams
                                                  for own, name in streams.items()):
        raise NmtkitError("--replace-unk: the ensemble's models read the source differently (other vocabularies or "
                          "length limits), so their attention is over different positions", exit_code=2)
    lexicon = load_lexicon(dict_path) if dict_path else {}
    counts = Counts()

    def replace(index: int, fields, text: str, hypothesis) -> str:
        counts.lines += 1
        if UNK not in hypothesis.tokens:
            return text
        words = line_text(index, fields[0]).split()[:max_input_len]
        tokens = replace_unks(loaded.tgt_vocab.id_to_token(hypothesis.tokens), words,
                              hypothesis.attention["source"], lexicon, counts)
        return " ".join(t for t, i in zip(tokens, hypothesis.tokens) if i == UNK or i >= 4)  # as decode drops

    return replace, counts


def given_options(*names: str) -> list[str]:
    """Which of the current command's options ``names`` (parameter names) the command line gave, as flags."""
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return []
    return ["--" + name.replace("_", "-") for name in names
            if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE]


def chained(steps: Sequence[PostProcess]) -> Optional[PostProcess]:
    """One :data:`PostProcess` doing ``steps`` in turn (None for none)."""
    if not steps:
        return None

    def run(index, fields, text, hypothesis):
        for step in steps:
            text = step(index, fields, text, hypothesis)
        return text
    return run


def parse_weights(text: Optional[str]) -> Optional[list[float]]:
    """``--weights``: numbers separated by commas or spaces."""
    if not text:
        return None
    try:
        return [float(w) for w in text.replace(",", " ").split()]
    except ValueError:
        raise NmtkitError(f"--weights: expects numbers separated by commas, got {text!r}", exit_code=2) from None


def decode(make_source, model_paths, input_paths, output_path, beam, greedy, n_best, length_penalty, batch_size,
           attention_out, device, precision, threads, flush, sampling=False, sampling_topk=None, temperature=None,
           seed=None, weights=None, attention_model=1, max_len_a=1.5,
           max_len_b=10, chunk_size=10_000, verbs=("translating", "translated"), lines=None, fields=False,
           attention_choice=(None, None), restrict=None, rewrite=None):
    """Decode the lines of ``input_paths`` (or stdin; several inputs side by side, one field each; with ``fields``,
    the TAB-separated fields of one input's lines) with a checkpoint, or an ensemble of several, one output line
    (or ``n_best``) per input line; ``make_source(loaded, model_path, name)`` gives the
    :class:`~nmtkit.search.sources.Source` (or :class:`~nmtkit.search.sources.StreamSources`) that turns lines into
    a model's inputs (``lines``, if given, are read instead of the input); ``attention_choice``: the layer and head
    whose attention is written; ``restrict(loaded)``, if given, the model to decode with instead (a shortlisted
    one, or one with edit costs); ``rewrite(loaded)``, if given, a :data:`PostProcess` for every output before a
    post-editing model's edits are applied (it gets each hypothesis' attention); ``verbs`` name the work in progress
    and done. Returns the source; raises an error naming the unusable lines once everything is written."""
    import torch

    from nmtkit.data.text import open_output
    from nmtkit.device import pick_device
    from nmtkit.inference import load_model
    from nmtkit.progress import log, progress
    from nmtkit.search.attention_file import open_attention
    from nmtkit.search.precision import for_inference
    from nmtkit.search.translator import SearchOptions, Translator

    if greedy:
        beam = 1
    if not sampling and any(value is not None for value in (sampling_topk, temperature, seed)):
        raise NmtkitError("--sampling-topk, --temperature and --seed go with --sampling", exit_code=2)
    if sampling and n_best > 1:
        raise NmtkitError("--n-best: --sampling draws one output a line", exit_code=2)
    searching = given_options("beam", "greedy", "length_penalty")
    if sampling and searching:
        raise NmtkitError(f"{searching[0]}: --sampling draws its outputs instead of searching", exit_code=2)
    if n_best > beam:
        raise NmtkitError(f"--n-best: expects at most the beam size ({beam}), got {n_best}", exit_code=2)
    if len(input_paths) > 1:
        check_same_length(input_paths)
    if threads > 0:
        torch.set_num_threads(threads)
    if attention_model > len(model_paths):
        raise NmtkitError(f"--attention-model: expects 1 to {len(model_paths)} (one per -m), got {attention_model}",
                          exit_code=2)
    given = parse_weights(weights)
    if given is not None and len(model_paths) == 1:
        raise NmtkitError("--weights: weighs the models of an ensemble (several -m); got one model", exit_code=2)
    if given is not None:  # checked before any model loads
        from nmtkit.search.ensemble import normalised_weights

        normalised_weights(given, len(model_paths))
    dev = pick_device(device)
    name = " + ".join(input_paths) or "<stdin>"
    members = [load_model(path, dev) for path in model_paths]
    sources = [make_source(member, path, name) for member, path in zip(members, model_paths)]
    if len(members) == 1:
        loaded, source = members[0], sources[0]
    else:
        from nmtkit.inference import ensemble_of
        from nmtkit.search.ensemble import ensemble_sources

        loaded = ensemble_of(members, model_paths, given, attention_model - 1)
        source = ensemble_sources(sources, loaded.model)
    loaded.model.choose_attention(*attention_choice)
    model, arithmetic = for_inference(restrict(loaded) if restrict else loaded.model, precision, dev)
    sampler = None
    if sampling:
        from nmtkit.search.sampling import Sampler

        sampler = Sampler(sampling_topk or 0, 1.0 if temperature is None else temperature,
                          torch.Generator(dev).manual_seed(1 if seed is None else seed))
    opts = SearchOptions(beam, n_best, max_len_a, max_len_b, length_penalty, batch_size,
                         attention=bool(attention_out or rewrite), sampler=sampler)
    postprocess = chained([step for step in (rewrite(loaded) if rewrite else None, as_text(loaded, sources[0])) if step])
    interactive = flush or (not input_paths and sys.stdin.isatty())
    start, count = time.perf_counter(), 0
    with ExitStack() as files:
        stream = lines if lines is not None else input_lines(input_paths, fields, files)
        writer = open_attention(attention_out, arch=loaded.config["arch"], model=" + ".join(model_paths), input=name,
                                inputs=list(loaded.model.inputs))
        translator = Translator(model, source, loaded.tgt_vocab, opts, dev, chunk_size=1 if interactive else chunk_size,
                                attention_out=writer, postprocess=postprocess)
        try:
            with open_output(output_path) as out, progress() as bar, arithmetic:
                task = bar.add_task(verbs[0], total=None, info="")
                for result in translator.translate(stream, on_batch=lambda k: bar.advance(task, k)):
                    count += 1
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
    seconds = time.perf_counter() - start
    log(f"{verbs[1]} {count} lines in {seconds:.1f} s ({count / max(seconds, 1e-9):.1f} lines/s, model loading excluded)")
    if source.invalid:
        numbers = ", ".join(map(str, source.invalid[:10])) + (" ..." if len(source.invalid) > 10 else "")
        raise NmtkitError(f"{name}: {len(source.invalid)} line(s) {source.problem} (line {numbers}); "
                          "each got an empty output line")
    return source
