"""What the library-decoding benchmarks of issue 34 (`decode_batches.py`, `decode_compiled.py`) share: their
options (a model, a file, how many of its lines, the batch a server would make, threads, beam) and the lines."""
from __future__ import annotations

import argparse


def decoding_parser(doc: str) -> argparse.ArgumentParser:
    """A parser of ``-m MODEL -i FILE [--lines 300] [--batch 16] [--threads 2] [--beam 5]``, described by the
    first paragraph of ``doc``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("-i", "--input", required=True)
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=5)
    return parser


def first_lines(path: str, count: int) -> list[str]:
    """The first ``count`` non-empty lines of ``path``, stripped."""
    return [line.strip() for line in open(path, encoding="utf-8") if line.strip()][:count]
