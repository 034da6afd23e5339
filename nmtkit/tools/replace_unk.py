"""UNK replacement with attention (target-target-attention.txt §3.2, after Jean et al. 2015).

Each ``<unk>`` in a hypothesis is replaced by the dictionary translation of the source word that
received the highest attention weight when the ``<unk>`` was generated, or by that source word
itself when the dictionary has no entry (copy, right for names and numbers).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import numpy as np

from nmtkit.errors import NmtkitError
from nmtkit.search.attention_file import AttentionFile

UNK = "<unk>"


@dataclass
class Counts:
    """What a run replaced."""

    from_dict: int = 0
    copied: int = 0
    lines: int = 0


def replace_unks(hyp: Sequence[str], src: Sequence[str], attention: np.ndarray, lexicon: dict[str, str],
                 counts: Counts) -> list[str]:
    """Replace each ``<unk>`` of ``hyp`` using row k of ``attention`` ([len(hyp)+1, ≥ len(src)])."""
    out = list(hyp)
    for k, token in enumerate(hyp):
        if token != UNK or not src:
            continue
        j = int(np.argmax(attention[k, :len(src)]))
        word = src[j]
        if word in lexicon:
            out[k] = lexicon[word]
            counts.from_dict += 1
        else:
            out[k] = word
            counts.copied += 1
    return out


def replace_file(hyps: Iterable[str], sources: Sequence[str], attention: AttentionFile, lexicon: dict[str, str],
                 hyp_name: str, src_name: str) -> tuple[Iterator[str], Counts]:
    """Yield the replaced hypothesis lines; check that hypotheses, sources and attention file belong together.

    ``sources`` are the source lines given to ``translate``; the attention file must have been
    written by that run (same number of sentences, same source words, same output tokens).
    """
    if len(sources) != len(attention):
        raise NmtkitError(f"{src_name} has {len(sources)} lines but {attention.path} holds {len(attention)} "
                          "sentences: the attention file must come from translating this source file")
    counts = Counts()

    def lines() -> Iterator[str]:
        for index, line in enumerate(hyps):
            lineno = index + 1
            if index >= len(attention):
                raise NmtkitError(f"{hyp_name} has more lines than the {len(attention)} sentences of {attention.path}")
            hyp = line.split()
            counts.lines += 1
            entry = attention[index]
            if entry["tgt_tokens"][:-1] != hyp:
                raise NmtkitError(f"{hyp_name}:{lineno}: the hypothesis is not the output recorded in "
                                  f"{attention.path} for sentence {index} (expected "
                                  f"{' '.join(entry['tgt_tokens'][:-1])!r}); replace-unk needs the plain "
                                  "output of the run that wrote the attention file, with a word-level vocabulary")
            src = sources[index].split()
            recorded = entry["src_tokens"][:-1]
            if len(recorded) > len(src) or any(r not in (w, UNK) for r, w in zip(recorded, src)):
                raise NmtkitError(f"{src_name}:{lineno}: the source line does not match sentence {index} of "
                                  f"{attention.path} ({' '.join(recorded)!r})")
            if UNK in hyp:
                line = " ".join(replace_unks(hyp, src[:len(recorded)], entry["attention"]["source"], lexicon, counts))
            yield line
        if counts.lines != len(attention):
            raise NmtkitError(f"{hyp_name} has {counts.lines} lines but {attention.path} holds {len(attention)} sentences")

    return lines(), counts
