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

from typing import Iterable, Iterator

from nmtkit.data.text import PathLike, check_readable, iter_lines
from nmtkit.errors import NmtkitError

IGNORED_SOURCES = {"<eps>", "NULL"}
EFLOMAL_OTHER = {"HMMF", "HMMR", "FERF", "FERR"}


def lexicon_entries(path: PathLike) -> Iterator[tuple[str, str, float]]:
    """The ``(source, target, score)`` entries of a table in any of the formats above, in file order (score -inf for
    a plain dictionary); a malformed line raises an error naming it."""
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
        if src not in IGNORED_SOURCES:
            yield src, tgt, score


def load_translations(path: PathLike, best: int) -> dict[str, list[str]]:
    """Map each source word to its ``best`` highest-scoring target words, best first (file order among equals)."""
    entries: dict[str, list[tuple[float, str]]] = {}
    for src, tgt, score in lexicon_entries(path):
        entries.setdefault(src, []).append((score, tgt))
    return {src: [tgt for _, tgt in sorted(options, key=lambda e: -e[0])[:best]] for src, options in entries.items()}


def load_lexicon(path: PathLike) -> dict[str, str]:
    """Map each source word to its highest-scoring target word."""
    return {src: tgts[0] for src, tgts in load_translations(path, 1).items()}


def write_table(out, entries: Iterable[tuple[str, str, float]]) -> int:
    """Write ``src<TAB>tgt<TAB>prob`` lines; return how many."""
    n = 0
    for src, tgt, prob in entries:
        out.write(f"{src}\t{tgt}\t{prob:.6g}\n")
        n += 1
    return n
