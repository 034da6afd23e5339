"""Decoding through the library (`nmtkit.decoding.Decoder`) as `serve` meets it (issue 34): the first N lines of
a file in batches of B, each batch one `translate` call, in arrival order and sorted by length first, on the main
thread and from another thread; then by continuous batching (`Decoder.continuous`), B lines in flight as B
clients keep them (a line joins the running search at the step after another is done), with what its steps carry:
sentences, and per row the positions of the input (padded to the longest live one; real) and of the target memory
(padded to the oldest live hypothesis; the row's own), averaged over steps.

    python bench/decode_batches.py -m MODEL -i FILE [--lines 300] [--batch 16] [--threads 2] [--beam 5]
"""
from __future__ import annotations

import statistics
import threading
import time

import torch
from served_lines import decoding_parser, first_lines, in_batches  # (bench/: the script's folder is on the path)

from nmtkit.decoding import Decoder, DecodeSettings
from nmtkit.search.beam import BeamSearch

SEEN: list[tuple[int, int, float, int, float]] = []  #: each search step's widths (:func:`widths`)
_step = BeamSearch.step


def _counted(search: BeamSearch):
    SEEN.append(widths(search))
    return _step(search)


BeamSearch.step = _counted  # type: ignore[method-assign,assignment]


def carried() -> str:
    """What the steps since SEEN was cleared carried, on average."""
    mean = [statistics.fmean(column) for column in zip(*SEEN)]
    return (f"{len(SEEN)} steps of {mean[0]:.1f} sentences, input positions {mean[1]:.1f} (real {mean[2]:.1f}), "
            f"target memory {mean[3]:.1f} (own {mean[4]:.1f})")


def widths(search: BeamSearch) -> tuple[int, int, float, int, float]:
    """Of a running search's step: live sentences; input positions per row, padded and real (the first mask of
    the state, whatever its shape: ``[B, S]`` for the RNNs, ``[B, 1, 1, S]`` for the Transformers); target memory
    positions per row, padded and the row's own (0 for a model whose state declares no growing tensor)."""
    state = search.state
    mask = next(t.flatten(1) for name, t in state.tensors.items() if t.dtype == torch.bool and name in state.static)
    grown = next((state[name].size(-2) for name in sorted(state.grows)), 0)
    own = float(search.age.float().mean()) if grown else 0.0
    return search.size, mask.size(1), float(mask.sum(1).float().mean()), grown, own


def main() -> None:
    parser = decoding_parser(__doc__)
    args = parser.parse_args()
    texts = first_lines(args.input, args.lines)
    decoder = Decoder(DecodeSettings(models=(args.model,), beam=args.beam, threads=args.threads))
    lines = decoder.lines(texts)
    list(decoder.translate(lines[:8]))  # (warm-up)
    arrival, by_length = lines, sorted(lines, key=lambda line: len(line.split()))

    def run(name: str, order: list) -> None:
        SEEN.clear()
        start = time.perf_counter()
        in_batches(decoder, order, args.batch)
        print(f"{name}: {len(order) / (time.perf_counter() - start):.1f} sentences/s; {carried()}", flush=True)

    for name, order in (("arrival order", arrival), ("sorted by length", by_length)):
        run(f"{name}, batches of {args.batch}, main thread", order)
        other = threading.Thread(target=run, args=(f"{name}, batches of {args.batch}, another thread", order))
        other.start()
        other.join()
    continuous(decoder, arrival, args.batch)


def continuous(decoder: Decoder, lines: list, width: int) -> None:
    """``lines`` through one running search, ``width`` in flight, in arrival order."""
    search = decoder.continuous()
    if search is None:
        print("continuous batching: not for this model or search")
        return
    SEEN.clear()
    start, sent, done = time.perf_counter(), 0, 0
    for _ in range(min(width, len(lines))):
        search.add(sent, [lines[sent]])
        sent += 1
    while search.busy:
        for _ in search.step():
            done += 1
            if sent < len(lines):
                search.add(sent, [lines[sent]])
                sent += 1
    print(f"continuous, {width} in flight: {done / (time.perf_counter() - start):.1f} sentences/s; {carried()}",
          flush=True)


if __name__ == "__main__":
    main()
