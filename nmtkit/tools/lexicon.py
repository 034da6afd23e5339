"""Lexical translation tables: the best target word for each source word.

Read formats, one entry per line (columns separated by tabs or spaces):

- ``src tgt score``: nmtkit's ``align`` (score = t(tgt | src)) and fast_align's ``-p`` table
  (score = log t(tgt | src); ``<eps>`` is its NULL word, ignored);
- ``LEX src tgt count``: eflomal's priors file (its other lines, HMMF/HMMR/FERF/FERR, are ignored);
- ``src tgt``: a plain bilingual dictionary; the first entry of a source word wins.

Only the ranking of a source word's entries matters, so probabilities, log-probabilities and
counts all work. Empty lines are skipped.
"""
from __future__ import annotations

from typing import Iterable

from nmtkit.data.text import PathLike, check_readable, iter_lines
from nmtkit.errors import NmtkitError

IGNORED_SOURCES = {"<eps>", "NULL"}
EFLOMAL_OTHER = {"HMMF", "HMMR", "FERF", "FERR"}


def load_lexicon(path: PathLike) -> dict[str, str]:
    """Map each source word to its highest-scoring target word."""
    best: dict[str, tuple[float, str]] = {}
    for lineno, line in enumerate(iter_lines(check_readable(path)), 1):
        fields = line.split()
        if not fields or fields[0] in EFLOMAL_OTHER:
            continue
        if fields[0] == "LEX" and len(fields) == 4:
            fields = fields[1:]
        if len(fields) == 2:
            src, tgt, score = fields[0], fields[1], float("-inf")
        elif len(fields) == 3:
            src, tgt = fields[0], fields[1]
            try:
                score = float(fields[2])
            except ValueError:
                raise NmtkitError(f"{path}:{lineno}: {fields[2]!r} is not a number "
                                  "(expected 'source target score')") from None
        else:
            raise NmtkitError(f"{path}:{lineno}: expected 'source target [score]' or 'LEX source target count', "
                              f"got {len(fields)} fields")
        if src in IGNORED_SOURCES:
            continue
        if src not in best or score > best[src][0]:
            best[src] = (score, tgt)
    return {src: tgt for src, (_, tgt) in best.items()}


def write_table(out, entries: Iterable[tuple[str, str, float]]) -> int:
    """Write ``src<TAB>tgt<TAB>prob`` lines; return how many."""
    n = 0
    for src, tgt, prob in entries:
        out.write(f"{src}\t{tgt}\t{prob:.6g}\n")
        n += 1
    return n
