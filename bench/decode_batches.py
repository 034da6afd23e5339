"""Decoding through the library (`nmtkit.decoding.Decoder`) as `serve` meets it (issue 34): the first N lines of
a file in batches of B, each batch one `translate` call, in arrival order and sorted by length first, on the main
thread and from another thread.

    python bench/decode_batches.py -m MODEL -i FILE [--lines 300] [--batch 16] [--threads 2] [--beam 5]
"""
from __future__ import annotations

import argparse
import threading
import time

from nmtkit.decoding import Decoder, DecodeSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("-i", "--input", required=True)
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=5)
    args = parser.parse_args()
    texts = [line.strip() for line in open(args.input, encoding="utf-8") if line.strip()][:args.lines]
    decoder = Decoder(DecodeSettings(models=(args.model,), beam=args.beam, threads=args.threads))
    lines = decoder.lines(texts)
    list(decoder.translate(lines[:8]))  # (warm-up)
    arrival, by_length = lines, sorted(lines, key=lambda line: len(line.split()))

    def run(name: str, order: list) -> None:
        start = time.perf_counter()
        for k in range(0, len(order), args.batch):
            list(decoder.translate(order[k:k + args.batch], chunk_size=args.batch))
        print(f"{name}: {len(order) / (time.perf_counter() - start):.1f} sentences/s", flush=True)

    for name, order in (("arrival order", arrival), ("sorted by length", by_length)):
        run(f"{name}, batches of {args.batch}, main thread", order)
        other = threading.Thread(target=run, args=(f"{name}, batches of {args.batch}, another thread", order))
        other.start()
        other.join()


if __name__ == "__main__":
    main()
