"""`--compile` against decoding uncompiled (issue 34): the first N lines of a file decoded through the library
(`nmtkit.decoding.Decoder`) by two decoders of the same model in one process, one with `compile`, taking turns
(A B A B): in batches of B lines in arrival order (as `serve` meets them) and all N sorted by length in batches of
32 (as `translate` does); sentences/s of each, their ratio, how long the compiled one took to warm up (the
compilation: `Decoder.warm_up`, then the first batches), and whether the outputs are the same.

    python bench/decode_compiled.py -m MODEL -i FILE [--lines 300] [--batch 16] [--threads 2] [--beam 5] [--rounds 3]
"""
from __future__ import annotations

import statistics
import time

from served_lines import decoding_parser, first_lines, in_batches  # (bench/: the script's folder is on the path)

from nmtkit.decoding import Decoder, DecodeSettings


def main() -> None:
    parser = decoding_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = first_lines(args.input, args.lines)
    decoders = {name: Decoder(DecodeSettings(models=(args.model,), beam=args.beam, threads=args.threads,
                                             compile=name == "compiled")) for name in ("uncompiled", "compiled")}
    lines = decoders["uncompiled"].lines(texts)
    start = time.perf_counter()
    decoders["compiled"].warm_up()
    print(f"compiled: warm-up (compilation) {time.perf_counter() - start:.1f} s", flush=True)
    for name, decoder in decoders.items():  # (what else a first search of these shapes builds, for both alike)
        start = time.perf_counter()
        list(decoder.translate(lines[:args.batch], chunk_size=args.batch))
        list(decoder.translate(lines[:64]))
        print(f"{name}: first batches {time.perf_counter() - start:.1f} s", flush=True)

    def arrival(decoder: Decoder) -> list:
        return in_batches(decoder, lines, args.batch)

    def by_length(decoder: Decoder) -> list:
        return list(decoder.translate(lines))

    rates: dict[tuple[str, str], list[float]] = {}
    outputs: dict[tuple[str, str], list] = {}
    for round_ in range(1, args.rounds + 1):
        for order in (arrival, by_length):
            for name, decoder in decoders.items():
                start = time.perf_counter()
                outputs[name, order.__name__] = [r.texts for r in order(decoder)]
                rate = len(lines) / (time.perf_counter() - start)
                rates.setdefault((name, order.__name__), []).append(rate)
                print(f"round {round_}, {order.__name__} (batches of {args.batch if order is arrival else 32}), "
                      f"{name}: {rate:.1f} sentences/s", flush=True)
    for order in ("arrival", "by_length"):
        ratios = [c / u for c, u in zip(rates["compiled", order], rates["uncompiled", order])]
        same = outputs["compiled", order] == outputs["uncompiled", order]
        print(f"{order}: compiled / uncompiled {statistics.median(ratios):.2f} (rounds: "
              f"{', '.join(f'{r:.2f}' for r in ratios)}); outputs {'identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
