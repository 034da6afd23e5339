"""Where a beam search's time goes, and how far a decoding step is from its compute bound (issue 18).

    python bench/beam_profile.py CHECKPOINT INPUT [--beam 5] [--batch-size 32] [--lines N] [--threads 2]
        [--shortlist FILE] [--arrival-order]

Translates the first N lines of INPUT (all by default) as ``nmtkit translate`` does (fp32, linear layers packed on
CPUs; with ``--arrival-order``, in batches of the lines in their order, as a server meets them) and prints the
time in the model's steps, in top-k, in state reordering, in encoding and in the rest of the search (finalising
hypotheses, bookkeeping, Python per step), with the number of steps and of rows (hypotheses) computed. The
compute bound: the multiply-adds of every linear layer a step runs (counted by hooks, rows × in × out) plus the
attention's energies and context (rows × source positions × attention size, and × memory size), against the
machine's measured matrix-multiply rate at the step's shapes.
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict

import torch
from rates import matmul_rate  # bench/rates.py: the script's folder is on the path
from torch import nn

import nmtkit.search.beam as beam_module
import nmtkit.search.greedy as greedy_module
from nmtkit.inference import load_model
from nmtkit.models.state import DecoderState
from nmtkit.search.precision import PackedLinear, for_inference
from nmtkit.search.sources import model_sources
from nmtkit.search.translator import SearchOptions, translate_inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint")
    parser.add_argument("input")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lines", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--shortlist", help="a lexical table, as translate --shortlist (first 100, best 100)")
    parser.add_argument("--arrival-order", action="store_true",
                        help="batches of the lines in their order, as a server meets them (not sorted by length)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    loaded = load_model(args.checkpoint)
    model = loaded.model
    if args.shortlist:
        from nmtkit.search.shortlist import Shortlist, Shortlisted
        from nmtkit.tools.lexicon import load_translations

        shortlist = Shortlist.from_translations(load_translations(args.shortlist, 100), loaded.vocabs["src"],
                                                loaded.tgt_vocab)
        model = Shortlisted(model, shortlist, len(loaded.tgt_vocab))
    model, _ = for_inference(model, "fp32", torch.device("cpu"))
    lines = open(args.input, "rb").read().splitlines(keepends=True)
    lines = lines[:args.lines] if args.lines else lines
    source = model_sources(loaded, args.checkpoint, [args.input])
    examples = [x for x in (source.read(i, line) for i, line in enumerate(lines)) if x and all(map(len, x.values()))]

    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    macs: dict[str, int] = defaultdict(int)
    stepping = [False]

    def timed(name, fn):
        def run(*a, **k):
            start = time.perf_counter()
            result = fn(*a, **k)
            seconds[name] += time.perf_counter() - start
            return result
        return run

    def step(prev, state):
        stepping[0] = True
        counts["steps"] += 1
        counts["rows"] += prev.numel()
        memory = next((t for name, t in state.tensors.items() if name.endswith("memory")), None)
        if memory is not None and memory.dim() == 3:  # attention energies and context over the source positions
            macs["attention (energies, context)"] += prev.numel() * memory.size(1) * (2 * memory.size(2))
        try:
            return decode_step(prev, state)
        finally:
            stepping[0] = False

    def count_linear(module, inputs, output):
        if stepping[0]:
            x = inputs[0]
            macs[kind(module)] += x.numel() // module.in_features * module.in_features * module.out_features

    def kind(module) -> str:
        return "output layer" if module.out_features == len(loaded.tgt_vocab) else "other linear layers"

    for module in model.modules():
        if isinstance(module, (nn.Linear, PackedLinear)):
            module.register_forward_hook(count_linear)
    decode_step = model.decode_step
    model.decode_step = timed("model steps", step)
    model.encode = timed("encoding", model.encode)
    for search in (beam_module, greedy_module):
        search.top_k = timed("top-k", search.top_k)
    DecoderState.reorder = timed("state reordering", DecoderState.reorder)

    opts = SearchOptions(beam_size=args.beam, batch_size=args.batch_size)
    start = time.perf_counter()
    with torch.inference_mode():
        chunk = args.batch_size if args.arrival_order else len(examples)  # (each chunk sorted by length)
        for first in range(0, len(examples), chunk):
            translate_inputs(model, examples[first:first + chunk], opts, torch.device("cpu"))
    total = time.perf_counter() - start
    rest = total - sum(seconds.values())
    order = "in arrival order" if args.arrival_order else "sorted by length"
    print(f"{len(examples)} sentences, beam {args.beam}, batch {args.batch_size} {order}, {args.threads} threads: "
          f"{total:.2f} s "
          f"({len(examples) / total:.1f} sent/s); {counts['steps']} steps, {counts['rows']:,} rows "
          f"({counts['rows'] / max(counts['steps'], 1):.0f} per step)")
    for name, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
        print(f"  {name:28s} {s:7.2f} s  {100 * s / total:5.1f}%")
    print(f"  {'search bookkeeping (rest)':28s} {rest:7.2f} s  {100 * rest / total:5.1f}%")
    per_row = {name: m / max(counts["rows"], 1) for name, m in macs.items()}
    print("multiply-adds per row of a step: " + ", ".join(f"{name} {m / 1e6:.2f} M" for name, m in per_row.items())
          + f"; total {sum(per_row.values()) / 1e6:.2f} M")
    rows = counts["rows"] // max(counts["steps"], 1)
    dec = next(m for m in model.modules() if isinstance(m, (nn.Linear, PackedLinear)) and kind(m) == "output layer")
    rate = matmul_rate(max(rows, 1), dec.in_features, dec.out_features)
    bound = sum(macs.values()) / rate
    print(f"matrix multiply at the output layer's shape [{rows}, {dec.in_features}] x [{dec.in_features}, "
          f"{dec.out_features}]: {2 * rate / 1e9:.0f} GFLOP/s; the steps' compute bound {bound:.2f} s, "
          f"{100 * bound / seconds['model steps']:.0f}% of their time, {100 * bound / total:.0f}% of the total")


if __name__ == "__main__":
    main()
