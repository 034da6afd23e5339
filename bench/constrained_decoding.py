"""Constrained decoding against plain beam search on the same lines, in-process, A B A B: seconds each (model
loading excluded), their ratio, and how many outputs hold their constraints. Each line gets constraints in turn
from --phrases (JSON lists, e.g. '["Datei"]' '["Dialog", "Schaltfläche"]').

    python bench/constrained_decoding.py -m MODEL -i test.en --lines 200 --phrases '["Datei"]' '["Dialog"]'
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from nmtkit.decoding import Decoder, DecodeSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("-i", "--input", required=True)
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--phrases", nargs="+", default=['["Datei"]'])
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lines = [line.strip() for line in open(args.input, encoding="utf-8")][:args.lines]
    choices = [json.loads(p) for p in args.phrases]
    phrases = [choices[i % len(choices)] for i in range(len(lines))]
    plain = Decoder(DecodeSettings(models=(args.model,), beam=args.beam, threads=args.threads))
    constrained = Decoder(DecodeSettings(models=(args.model,), beam=args.beam, threads=args.threads, constraints=True))
    seconds: dict[str, list[float]] = {"plain": [], "constrained": []}
    for _ in range(args.rounds):
        start = time.perf_counter()
        plain.translate_texts(lines)
        seconds["plain"].append(time.perf_counter() - start)
        start = time.perf_counter()
        found = constrained.translate_texts(lines, constraints=phrases)
        seconds["constrained"].append(time.perf_counter() - start)
    held = sum(all(p in r.texts[0] for p in ps) for r, ps in zip(found, phrases))
    ratios = [c / p for p, c in zip(seconds["plain"], seconds["constrained"])]
    print(f"{len(lines)} lines, beam {args.beam}, {args.threads} thread(s): plain "
          f"{' '.join(f'{s:.1f}' for s in seconds['plain'])} s, constrained "
          f"{' '.join(f'{s:.1f}' for s in seconds['constrained'])} s; ratio {' '.join(f'{r:.2f}' for r in ratios)}; "
          f"constraints held in {held} of {len(lines)} outputs")


if __name__ == "__main__":
    main()
