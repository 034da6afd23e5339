"""nmtkit score: BLEU, chrF, chrF++, TER (sacrebleu, with a bootstrap confidence interval if asked) or CIDEr-D of a
hypothesis file, or a model's perplexity."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Sequence

import click

from nmtkit.cli.options import Checked, check_goes_with
from nmtkit.cli.paths import Command, ReadFile
from nmtkit.config import POSITIVE, Range
from nmtkit.errors import NmtkitError
from nmtkit.metrics.text import METRICS, SACREBLEU_METRICS


@click.command("score", cls=Command)
@click.option("--metric", type=click.Choice(METRICS + ("ppl",)), default="bleu", show_default=True)
@click.option("-r", "--ref", "refs", multiple=True, type=ReadFile(),
              help="reference file (repeat for several references)")
@click.option("--tab-refs", is_flag=True,
              help="each reference line holds several references separated by TABs (captions; preprocess's valid.en)")
@click.option("--max-ngram", type=Checked(int, Range(1, 4)), default=4, show_default=True, help="BLEU-N: n-grams up to N")
@click.option("--no-brevity-penalty", is_flag=True,
              help="BLEU as the geometric mean of the n-gram precisions alone (captioning papers' BLEU-3/4)")
@click.option("-i", "--input", "hyp_path", type=ReadFile(stdin=True), help="hypotheses [default: stdin]")
@click.option("--tokenize", help="sacrebleu tokenizer for BLEU (13a, intl, zh, char, none, ...) [default: 13a]")
@click.option("--lowercase", is_flag=True, help="case-insensitive scoring")
@click.option("-m", "--model", "model_path", type=ReadFile(), help="with --metric ppl: checkpoint")
@click.option("--src", "src_paths", multiple=True, type=ReadFile(),
              help="with --metric ppl: source file (a model with several inputs: one --src each, in its order)")
@click.option("--batch-size", type=Checked(int, POSITIVE), default=64, show_default=True, help="with --metric ppl: sentences per batch")
@click.option("--confidence", is_flag=True,
              help="also the 95% bootstrap confidence interval of the score (sacrebleu's, mean ± half-width)")
@click.option("--bootstrap", "samples", type=Checked(int, Range(10, 100_000)), default=1000, show_default=True,
              help="with --confidence: bootstrap resamples")
@click.option("--score-only", is_flag=True, help="print the number only (with --confidence: score, mean, half-width)")
def command(metric, refs, tab_refs, max_ngram, no_brevity_penalty, hyp_path, tokenize, lowercase, model_path, src_paths,
            batch_size, confidence, samples, score_only):
    """Score translations (or captions) against references, or a model's perplexity on a test set.

    \b
    nmtkit score --metric bleu -r test.de < hyp.de
    nmtkit score --metric bleu --max-ngram 4 --no-brevity-penalty --tab-refs -r caps/test.en < captions.txt
    nmtkit score --metric cider --tab-refs -r caps/test.en < captions.txt
    nmtkit score --metric ppl -m best.pt --src test.en -r test.de
    nmtkit score --metric ppl -m ape.pt --src test.src --src test.mt -r test.pe
    nmtkit score --metric ppl -m captioner.pt --src caps/test.images --tab-refs -r caps/test.en
    """
    from nmtkit.data.text import check_readable, decode_line, read_lines, reference_streams, strip_newline

    if not refs:
        raise NmtkitError("-r/--ref: at least one reference file is required", exit_code=2)
    ppl = metric == "ppl"
    check_goes_with(("max_ngram", metric == "bleu", "--metric bleu"), ("no_brevity_penalty", metric == "bleu",
                                                                         "--metric bleu"),
                    ("model_path", ppl, "--metric ppl"), ("src_paths", ppl, "--metric ppl"),
                    ("batch_size", ppl, "--metric ppl"), ("samples", confidence, "--confidence"),
                    ("tokenize", metric == "bleu", "--metric bleu"),
                    ("lowercase", not ppl, "a metric of hypotheses (--metric ppl scores the model's probability of -r)"),
                    ("hyp_path", not ppl, "a metric of hypotheses (--metric ppl scores the model's probability of -r)"))
    if tokenize is not None:
        from nmtkit.metrics.text import check_tokenizer

        check_tokenizer(tokenize)
    if confidence and (metric not in SACREBLEU_METRICS or no_brevity_penalty):
        raise NmtkitError(f"--confidence: sacrebleu's bootstrap is for {', '.join(SACREBLEU_METRICS)} (BLEU with its "
                          "brevity penalty)", exit_code=2)
    if metric == "ppl":
        if not (model_path and src_paths) or len(refs) != 1:
            raise NmtkitError("--metric ppl needs -m CKPT, --src FILE and one -r FILE", exit_code=2)
        value = _perplexity(model_path, src_paths, refs[0], batch_size, tab_refs)
        click.echo(f"{value:.4f}" if score_only else f"PPL = {value:.4f} (Eq. 13; tokens include </s>)")
        return
    references = [read_lines(check_readable(r, allow_empty=True, stream=True)) for r in refs]
    if tab_refs:
        if len(refs) != 1:
            raise NmtkitError("--tab-refs: give one -r file whose lines hold the references", exit_code=2)
        references = reference_streams(references[0])
    if hyp_path:
        hyps = read_lines(check_readable(hyp_path, allow_empty=True, stream=True))
    else:
        hyps = [decode_line(strip_newline(raw), "<stdin>", n) for n, raw in enumerate(sys.stdin.buffer, 1)]
    name = hyp_path or "<stdin>"
    for r, lines in zip(refs, references):
        if len(lines) != len(hyps):
            raise NmtkitError(f"{name} has {len(hyps)} lines but reference {r} has {len(lines)}")
    if not hyps:  # and so the references: most likely a mistake, and no metric is defined on nothing
        raise NmtkitError(f"{name} and reference {' and '.join(refs)} are empty: nothing to score")
    from nmtkit.metrics.text import corpus_score

    result = corpus_score(metric, hyps, references, tokenize=tokenize, lowercase=lowercase, max_ngram=max_ngram,
                          brevity_penalty=not no_brevity_penalty, n_bootstrap=samples if confidence else 1)
    if score_only:
        click.echo(f"{result.score:.2f}" + (f" {result.mean:.2f} {result.ci:.2f}" if confidence else ""))
    else:
        click.echo(f"{result.text}\n{result.signature}")


def _perplexity(model_path: str, src_paths: Sequence[str], ref_path: str, batch_size: int, tab_refs: bool) -> float:
    """Perplexity of the references given the sources (text; image paths, or a features file, .npy or HDF5, for a
    captioning model; one file per input of a model with several); with ``tab_refs`` every reference of a line
    counts, paired with that line's inputs."""
    from nmtkit.data.batching import make_batch
    from nmtkit.data.images import FEATURE_SUFFIXES, load_features
    from nmtkit.data.text import check_parallel, count_lines, read_lines
    from nmtkit.device import is_out_of_memory, pick_device
    from nmtkit.inference import load_model
    from nmtkit.metrics.perplexity import corpus_nll, perplexity
    from nmtkit.search.sources import (
        FeatureSource,
        check_input_count,
        feature_inputs,
        line_text,
        model_sources,
        sort_length,
        stack_inputs,
    )

    given = [p for p in src_paths if Path(p).suffix in FEATURE_SUFFIXES]  # the features of a model's image input
    texts = [p for p in src_paths if p not in given]
    if len(given) > 1:
        raise NmtkitError(f"--src: {len(given)} feature files ({', '.join(given)}); a model reads one", exit_code=2)
    if texts:
        check_parallel(*texts, ref_path)
    device = pick_device("auto")
    loaded = load_model(model_path, device)
    rows = FeatureSource(load_features(given[0], f"--src {given[0]}", count_lines(ref_path), "lines"),
                         name=f"--src {given[0]}") if given else None
    check_input_count(loaded, len(texts), "--src", features=rows is not None)
    sources = model_sources(loaded, model_path, texts, max_input_len=None, features=rows, strict=True)
    lines = zip(*([line.encode() for line in read_lines(p)] for p in texts)) if texts else rows.lines()
    form, fields_of = loaded.output_form, {s: k for k, s in enumerate(sources.fields)}
    images = set(feature_inputs(loaded))
    pairs, line_of, waiting = [], [], []
    for n, (fields, refs) in enumerate(zip(lines, read_lines(ref_path))):
        inputs = sources.read(n, fields)
        assert inputs is not None  # (strict sources raise for an unusable line)
        if any(not len(inputs[stream]) for stream in images):
            raise NmtkitError(f"{sources.name}:{n + 1}: no image named: an unusable input for perplexity")
        waiting.append(inputs)
        if len(waiting) >= (sources.chunk_size or 1):  # images: a chunk through the CNN at once
            sources.finish(waiting)
            waiting = []
        for ref in refs.split("\t") if tab_refs else [refs]:
            if form.reads:  # the target sequence of the reference in the model's output form
                try:
                    ref = form.target(ref, {s: line_text(n, fields[fields_of[s]]) for s in form.reads})
                except ValueError as e:
                    raise NmtkitError(f"{ref_path}:{n + 1}: {e}") from None
            pairs.append((inputs, loaded.tgt_vocab.encode(ref)))
            line_of.append(n + 1)
    sources.finish(waiting)
    order = sorted(range(len(pairs)), key=lambda i: sort_length(pairs[i][0]))
    chunk: list[int] = []  # (the batch being scored)

    def batches():
        for k in range(0, len(order), batch_size):
            chunk[:] = order[k:k + batch_size]
            yield make_batch(stack_inputs([pairs[i][0] for i in chunk]), [pairs[i][1] for i in chunk])
    try:
        nll, tokens = corpus_nll(loaded.model, batches(), device)
    except RuntimeError as e:
        if not (is_out_of_memory(e) and chunk):
            raise
        longest = max(chunk, key=lambda i: (sort_length(pairs[i][0]), len(pairs[i][1])))
        raise NmtkitError(f"{ref_path}:{line_of[longest]}: out of memory scoring the batch of {len(chunk)} pair(s) that "
                          f"holds this line, the longest ({sort_length(pairs[longest][0]):,} input and "
                          f"{len(pairs[longest][1]):,} reference tokens): perplexity is of whole pairs, so score without "
                          "it, or with a smaller --batch-size") from None
    if math.isnan(nll):
        raise NmtkitError(f"-m {model_path}: its log-probabilities of {ref_path} are not numbers (NaN): a damaged "
                          "model?")
    return perplexity(nll, tokens)
