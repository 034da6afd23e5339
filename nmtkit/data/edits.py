"""Automatic post-editing targets as edit operations (multi-source-attention.txt §4.2, after Libovický et al., 2016:
"CUNI System for WMT16 Automatic Post-Editing and Multimodal Translation Tasks").

An APE model's target is the sequence of operations that turns the MT output into its post-edit: ``<keep>`` copies
the next MT word, ``<delete>`` skips it, and any other token inserts itself. Words are the whitespace-separated
tokens of the raw text.
"""
from __future__ import annotations

from typing import Sequence

KEEP = "<keep>"
DELETE = "<delete>"
OPERATIONS = (KEEP, DELETE)


def _lcs_table(mt: Sequence[str], pe: Sequence[str]) -> list[list[int]]:
    """``table[i][j]``: the length of the longest common subsequence of ``mt[i:]`` and ``pe[j:]``."""
    table = [[0] * (len(pe) + 1) for _ in range(len(mt) + 1)]
    for i in range(len(mt) - 1, -1, -1):
        for j in range(len(pe) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if mt[i] == pe[j] else max(table[i + 1][j], table[i][j + 1])
    return table


def edit_operations(mt: str, pe: str) -> str:
    """The edit operations, space-joined, turning the words of ``mt`` into those of ``pe`` along a longest common
    subsequence: matched words are ``<keep>``, the other MT words ``<delete>``, the other PE words inserted.

    Equal words at the same point are always matched; when the words differ and both deleting the MT word and
    inserting the PE word keep the alignment minimal, the deletion comes first. A PE word that is itself
    ``<keep>`` or ``<delete>`` cannot be expressed: ValueError naming it.
    """
    src, tgt = mt.split(), pe.split()
    for word in tgt:
        if word in OPERATIONS:
            raise ValueError(f"the post-edit word {word!r} is an edit operation's name and cannot be inserted")
    table = _lcs_table(src, tgt)
    ops: list[str] = []
    i = j = 0
    while i < len(src) or j < len(tgt):
        if i < len(src) and j < len(tgt) and src[i] == tgt[j]:
            ops.append(KEEP)
            i, j = i + 1, j + 1
        elif i < len(src) and (j == len(tgt) or table[i + 1][j] >= table[i][j + 1]):
            ops.append(DELETE)
            i += 1
        else:
            ops.append(tgt[j])
            j += 1
    return " ".join(ops)


def apply_edits(mt: str, ops: str) -> str:
    """The text that the edit operations ``ops`` make of the words of ``mt``, space-joined.

    Any sequence is applied without error (a model's output may be ill-formed), by this repair rule: a ``<keep>``
    or ``<delete>`` after the MT words are used up is ignored, and MT words that the operations never reach are
    kept, as if a ``<keep>`` followed for each.
    """
    words = mt.split()
    out: list[str] = []
    i = 0
    for op in ops.split():
        if op not in OPERATIONS:
            out.append(op)
        elif i < len(words):
            if op == KEEP:
                out.append(words[i])
            i += 1
    return " ".join(out + words[i:])
