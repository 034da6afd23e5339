"""What the decoding benchmarks of issue 34 share: the library's (`decode_batches.py`, `decode_compiled.py`)
options (a model, a file, how many of its lines, the batch a server would make, threads, beam) and batches as a
server makes them; the lines (`serve_load.py` too)."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from nmtkit.decoding import Decoder
    from nmtkit.search.translator import LineResult


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


def in_batches(decoder: "Decoder", lines: Sequence, size: int) -> list["LineResult"]:
    """``lines`` translated in batches of ``size`` in their order (each batch one ``translate`` call), as a server
    meets them."""
    return [r for k in range(0, len(lines), size) for r in decoder.translate(lines[k:k + size], chunk_size=size)]
