"""nmtkit translate: text in, translations out, one line per input line."""
from __future__ import annotations

import click

from nmtkit.cli.decoding import CNN_WEIGHTS, decode, decoding_options
from nmtkit.cli.options import check_goes_with, setting
from nmtkit.cli.paths import Command, ReadFile, WriteFile
from nmtkit.errors import NmtkitError


@click.command("translate", cls=Command)
@decoding_options
@click.option("-i", "--input", "input_paths", multiple=True, type=ReadFile(stdin=True),
              help="input file [default: stdin]; a model with several inputs: one -i each, in the order of its inputs")
@click.option("--fields", is_flag=True,
              help="each line of the input holds the model's inputs as TAB-separated fields, in its order")
@click.option("--max-len-a", type=setting("max_len_a"), default=1.5, show_default=True, help="output length limit a·|x| + b: a")
@click.option("--max-len-b", type=setting("max_len_b"), default=10, show_default=True, help="output length limit a·|x| + b: b")
@click.option("--max-input-len", type=setting("max_input_len"), default=250, show_default=True, help="truncate longer inputs (tokens), with a warning")
@click.option("--split-long", is_flag=True,
              help="cut a line longer than --max-input-len (or the model's positions) at sentence ends into pieces "
                   "translated apart and joined, instead of truncating it (one text input)")
@click.option("--attention-layer", type=setting("attention_layer"),
              help="with --attention-out, Transformers: the decoder layer whose attention is written [default: last]")
@click.option("--attention-head", type=setting("attention_head"),
              help="with --attention-out, Transformers: the head whose attention is written [default: their mean]")
@CNN_WEIGHTS
@click.option("--features", type=ReadFile(), metavar="FILE",
              help="multimodal models: the image features precomputed, .npy or HDF5 ('features' [lines, grid, D]), "
                   "row i for input line i; the inputs then hold the text fields only")
@click.option("--shortlist", "shortlist_path", type=ReadFile(), metavar="FILE",
              help="restrict each batch's output layer to the most frequent target words and the best translations "
                   "of its source words in FILE, a lexical table (nmtkit align, fast_align -p, eflomal priors)")
@click.option("--shortlist-first", type=setting("shortlist_first"), default=100, show_default=True,
              help="with --shortlist: the N most frequent target words (the first ids of the vocabulary) always in")
@click.option("--shortlist-best", type=setting("shortlist_best"), default=100, show_default=True,
              help="with --shortlist: the K best translations of each source word")
@click.option("--edit-cost", type=setting("edit_cost"), default=0.0, show_default=True,
              help="post-editing models (preprocess --ape-edits): each edit operation (anything but <keep> and the "
                   "end) costs this much log-probability in the search, so the output changes the MT only where the "
                   "model prefers a change by more; tune it on dev data (large: the MT unchanged)")
@click.option("--alignments", "alignments_path", type=WriteFile(), metavar="FILE",
              help="write each best output's word alignment with the (first) input to FILE, one line per input line, "
                   "Moses-style 'i-j' pairs (source word i, output word j, from 0), from the attention; with "
                   "--output-format json also each output's 'alignment'")
@click.option("--replace-unk", is_flag=True,
              help="replace each <unk> of the output by the --dict translation of the source word it attended to "
                   "most, or by that word (word vocabularies; as 'nmtkit replace-unk')")
@click.option("--dict", "dict_path", type=ReadFile(), metavar="FILE",
              help="with --replace-unk: a lexical table (nmtkit align, fast_align -p, eflomal priors, word pairs)")
def command(input_paths, fields, max_len_a, max_len_b, max_input_len, split_long, attention_layer, attention_head,
            cnn_weights,
            features, shortlist_path, shortlist_first, shortlist_best, edit_cost, alignments_path, replace_unk,
            dict_path, **options):
    """Translate text with a trained model.

    Exactly one output line per input line: an empty input line gives an empty output line,
    an over-long line is truncated with a warning, and a line of invalid UTF-8 gives an empty
    output line, an error naming the line, and exit code 1 once everything is written.
    A model with several inputs (src and mt, src and image paths) reads one -i per input or,
    with --fields, TAB-separated fields.
    """
    from nmtkit.progress import log, warn
    from nmtkit.search.sources import (
        FeatureSource,
        TextSource,
        check_input_count,
        check_translator,
        feature_inputs,
        model_sources,
        read_inputs,
    )

    check_goes_with(("shortlist_first", bool(shortlist_path), "--shortlist"),
                    ("shortlist_best", bool(shortlist_path), "--shortlist"))
    if (attention_layer or attention_head) and not (options["attention_out"] or alignments_path):
        raise NmtkitError("--attention-layer and --attention-head go with --attention-out or --alignments",
                          exit_code=2)
    if None in input_paths:  # (-i -: the standard input)
        if len(input_paths) > 1:
            raise NmtkitError("-i -: the standard input is read as the one input; give the inputs read side by side "
                              "as files", exit_code=2)
        input_paths = ()
    if fields and len(input_paths) > 1:
        raise NmtkitError("--fields: the fields come from one input; give one -i FILE (or none: stdin)", exit_code=2)

    def source(loaded, model_path):
        check_translator(loaded, model_path)
        if cnn_weights and (features or not feature_inputs(loaded)):
            raise NmtkitError("--cnn-weights: goes with a model that makes features from images (not with --features)",
                              exit_code=2)
        inputs = read_inputs(loaded, bool(features))
        if not fields and (len(input_paths) > 1 or len(inputs) > 1):
            check_input_count(loaded, len(input_paths), "-i", ", or their TAB-separated fields with --fields",
                              bool(features))
        name = " + ".join(input_paths) or "<stdin>"
        names = input_paths if len(input_paths) > 1 else [name] * len(inputs)
        rows = None
        if features:
            from nmtkit.data.images import load_features
            from nmtkit.data.text import count_lines, is_stream

            count = count_lines(input_paths[0]) if input_paths and not is_stream(input_paths[0]) else None
            rows = FeatureSource(load_features(features, f"--features {features}", count, "lines"), name=f"--features {features}")
        return model_sources(loaded, model_path, names, max_input_len, cnn_weights, rows, split=split_long)

    decoder = decode(source, options, input_paths=input_paths, fields=fields, max_len_a=max_len_a,
                     max_len_b=max_len_b, max_input_len=max_input_len, split_long=split_long,
                     attention_layer=attention_layer,
                     attention_head=attention_head, cnn_weights=cnn_weights, shortlist=shortlist_path,
                     shortlist_first=shortlist_first, shortlist_best=shortlist_best, edit_cost=edit_cost,
                     replace_unk=replace_unk, dictionary=dict_path, alignments_path=alignments_path)
    for given in decoder.sources[0].sources.values():  # (--features on stdin: rows left over are an error)
        if isinstance(given, FeatureSource):
            given.check_all_read()
        elif isinstance(given, TextSource):
            for said in given.warnings(decoder.loaded.model.inputs):
                warn(said)
    counts = decoder.unk_counts
    if counts is not None:
        log(f"replaced {counts.from_dict + counts.copied} <unk> in {counts.lines} outputs: "
            f"{counts.from_dict} from the dictionary, {counts.copied} copied")
