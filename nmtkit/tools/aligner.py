"""Word translation tables for replace-unk: IBM Model 2 with a diagonal prior, or counts of links.

The aligner is fast_align's model (Dyer, Chahuneau and Smith, 2013): each target word f_i of a
sentence pair picks a source position j, or NULL, with

    p(a_i = j | i, m, n) = p0                                       for NULL
                         = (1 − p0) · exp(λ h(i, j, m, n)) / Z_λ(i)  otherwise,  h = −|i/m − j/n|

and is generated with probability t(f_i | e_j). EM re-estimates t with the prior fixed. Every
(source word, target word) pair that co-occurs in a sentence pair gets one slot of a flat table,
and the E-step runs vectorised over all alignment links of a chunk of sentence pairs at once, so
memory is bounded by the chunk size and the number of distinct co-occurring pairs.

Both directions of the table follow fast_align's forward model: t(target | source).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional, Sequence

import numpy as np

from nmtkit.errors import NmtkitError

NULL = "<eps>"  # fast_align's name for the empty source word


@dataclass
class Corpus:
    """Sentence pairs as word ids, in chunks of about ``chunk_links`` possible links each."""

    src_words: list[str]
    tgt_words: list[str]
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]  # src ids, src lens, tgt ids, tgt lens
    too_long: list[int]  #: the line numbers (from 1) of pairs left out for having more links than a chunk

    @property
    def pairs(self) -> int:
        """How many sentence pairs it holds (those with an empty side are left out)."""
        return sum(len(src_lens) for _, src_lens, _, _ in self.chunks)

    @property
    def null_id(self) -> int:
        return len(self.src_words)


#: possible links (target words × (source words + 1)) of the sentence pairs whose E-step runs at once
CHUNK_LINKS = 2_000_000


def index_corpus(pairs: Iterable[tuple[Sequence[str], Sequence[str]]], chunk_links: int = CHUNK_LINKS) -> Corpus:
    """Turn tokenised sentence pairs into id arrays; pairs with an empty side are skipped, and so are pairs of more
    than ``chunk_links`` possible links (m · (n + 1): two sides of 1,400 words), whose links alone would take
    memory past the chunk's bound (a pair of 12,000 words took 12 GB), listed in ``too_long``."""
    src_index: dict[str, int] = {}
    tgt_index: dict[str, int] = {}
    chunks = []
    src_ids: list[int] = []
    tgt_ids: list[int] = []
    src_lens: list[int] = []
    tgt_lens: list[int] = []
    links = 0
    too_long: list[int] = []

    def flush():
        if src_lens:
            chunks.append((np.array(src_ids, np.int64), np.array(src_lens, np.int64),
                           np.array(tgt_ids, np.int64), np.array(tgt_lens, np.int64)))
        for part in (src_ids, tgt_ids, src_lens, tgt_lens):
            part.clear()

    for line, (src, tgt) in enumerate(pairs, 1):
        if not src or not tgt:
            continue
        if len(tgt) * (len(src) + 1) > chunk_links:
            too_long.append(line)
            continue
        src_ids.extend(src_index.setdefault(w, len(src_index)) for w in src)
        tgt_ids.extend(tgt_index.setdefault(w, len(tgt_index)) for w in tgt)
        src_lens.append(len(src))
        tgt_lens.append(len(tgt))
        links += len(tgt) * (len(src) + 1)
        if links >= chunk_links:
            flush()
            links = 0
    flush()
    return Corpus(list(src_index), list(tgt_index), chunks, too_long)


@dataclass
class Links:
    """Every possible link of a chunk: target word i of its sentence against source position j or NULL."""

    row: np.ndarray    # which target token (0 .. number of target tokens in the chunk − 1)
    src: np.ndarray    # source word id, or the NULL id
    tgt: np.ndarray    # target word id
    prior: np.ndarray  # p(a_i = j | i, m, n)


def chunk_links(corpus: Corpus, chunk: tuple, tension: float, null_prob: float) -> Links:
    """All links of one chunk with their diagonal prior (fast_align's Eq. for δ, see the module doc)."""
    src_ids, src_lens, tgt_ids, tgt_lens = chunk
    n_sent = len(src_lens)
    sent_of_row = np.repeat(np.arange(n_sent), tgt_lens)              # sentence of each target token
    tgt_start = np.repeat(np.cumsum(tgt_lens) - tgt_lens, tgt_lens)
    i = np.arange(len(tgt_ids)) - tgt_start + 1                          # 1-based target position
    m = tgt_lens[sent_of_row]
    n = src_lens[sent_of_row]
    width = n + 1                                                        # n source positions + NULL
    row = np.repeat(np.arange(len(tgt_ids)), width)
    link_start = np.repeat(np.cumsum(width) - width, width)
    j = np.arange(len(row)) - link_start + 1                             # 1..n, n+1 is NULL
    n_r, m_r, i_r = n[row], m[row], i[row]
    is_null = j == n_r + 1
    src_start = (np.cumsum(src_lens) - src_lens)[sent_of_row][row]
    src = np.where(is_null, corpus.null_id, src_ids[np.minimum(src_start + j - 1, len(src_ids) - 1)])
    score = np.where(is_null, 0.0, np.exp(-tension * np.abs(i_r / m_r - j / n_r)))
    z = np.bincount(row, weights=score, minlength=len(tgt_ids))
    prior = np.where(is_null, null_prob, (1.0 - null_prob) * score / z[row])
    return Links(row, src, tgt_ids[row], prior)


class PairTable:
    """A flat table over the distinct (source id, target id) pairs that co-occur in the corpus."""

    def __init__(self, corpus: Corpus, links: Iterable[Links]):
        self.n_tgt = len(corpus.tgt_words)
        keys = np.unique(np.concatenate([np.unique(self.key(l.src, l.tgt)) for l in links] or [np.zeros(0, np.int64)]))
        self.keys = keys
        self.src = keys // self.n_tgt
        self.tgt = keys % self.n_tgt

    def key(self, src: np.ndarray, tgt: np.ndarray) -> np.ndarray:
        return src * self.n_tgt + tgt

    def slots(self, links: Links) -> np.ndarray:
        return np.searchsorted(self.keys, self.key(links.src, links.tgt))


def train_ibm2(corpus: Corpus, iterations: int = 5, tension: float = 4.0, null_prob: float = 0.08,
               on_step: Optional[Callable[[], None]] = None) -> tuple[PairTable, np.ndarray]:
    """EM for t(target | source) under the diagonal prior; returns the pair table and t per pair.

    The first iteration starts from a uniform t, so it is IBM Model 1 with the diagonal prior.
    ``on_step`` is called after each chunk of each iteration (for a progress bar).
    """
    if not corpus.chunks:
        raise NmtkitError("no sentence pair with words on both sides to align")
    table = PairTable(corpus, (chunk_links(corpus, c, tension, null_prob) for c in corpus.chunks))
    t = np.full(len(table.keys), 1.0 / max(table.n_tgt, 1))
    for _ in range(iterations):
        counts = np.zeros_like(t)
        for chunk in corpus.chunks:
            links = chunk_links(corpus, chunk, tension, null_prob)
            slot = table.slots(links)
            joint = t[slot] * links.prior
            posterior = joint / np.bincount(links.row, weights=joint)[links.row]
            counts += np.bincount(slot, weights=posterior, minlength=len(t))
            if on_step:
                on_step()
        totals = np.bincount(table.src, weights=counts, minlength=corpus.null_id + 1)
        t = counts / np.maximum(totals[table.src], 1e-300)  # NULL gets no counts when null_prob is 0
    return table, t


def count_links(pairs: Iterable[tuple[Sequence[str], Sequence[str], str]], name: str) -> dict[tuple[str, str], float]:
    """Relative frequencies t(tgt | src) from Pharaoh-format links ("0-1 2-2"), as from eflomal or fast_align.

    ``pairs`` yields (source words, target words, links line); ``name`` is the links file for errors.
    """
    counts: dict[tuple[str, str], float] = {}
    for lineno, (src, tgt, line) in enumerate(pairs, 1):
        for link in line.split():
            try:
                a, b = link.split("-")
                s, g = src[int(a)], tgt[int(b)]
            except (ValueError, IndexError):
                raise NmtkitError(f"{name}:{lineno}: bad link {link!r} for a pair of {len(src)} and "
                                  f"{len(tgt)} words (expected SRC-TGT positions from 0)") from None
            counts[s, g] = counts.get((s, g), 0.0) + 1.0
    totals: dict[str, float] = {}
    for (s, _), c in counts.items():
        totals[s] = totals.get(s, 0.0) + c
    return {(s, g): c / totals[s] for (s, g), c in counts.items()}


def table_entries(corpus: Corpus, table: PairTable, t: np.ndarray, min_prob: float) -> Iterator[tuple[str, str, float]]:
    """(source word, target word, t) with t ≥ min_prob, NULL excluded; source words in order of first
    appearance, each one's translations by falling t."""
    keep = (t >= min_prob) & (table.src != corpus.null_id)
    src, tgt, prob = table.src[keep], table.tgt[keep], t[keep]
    for k in np.lexsort((-prob, src)):
        yield corpus.src_words[src[k]], corpus.tgt_words[tgt[k]], float(prob[k])


def viterbi_links(corpus: Corpus, table: PairTable, t: np.ndarray, tension: float = 4.0,
                  null_prob: float = 0.08) -> list[list[tuple[int, int]]]:
    """The most probable alignment of each sentence pair of ``corpus`` (those it holds, in order)
    under the trained model: each target word's source position (or NULL, left out) by t(f | e) · p(a | i, m, n),
    as ``(source position, target position)`` links from 0, as fast_align writes them."""
    found: list[list[tuple[int, int]]] = []
    for chunk in corpus.chunks:
        src_lens, tgt_lens = chunk[1], chunk[3]
        links = chunk_links(corpus, chunk, tension, null_prob)
        score = t[table.slots(links)] * links.prior
        width = np.bincount(links.row)
        position = np.arange(len(links.row)) - np.repeat(np.cumsum(width) - width, width)  # 0..n-1, n is NULL
        order = np.lexsort((position, -score, links.row))  # each row's best first, ties to the leftmost
        best = position[order[np.r_[0, np.flatnonzero(np.diff(links.row[order])) + 1]]]
        row = 0
        for n, m in zip(src_lens, tgt_lens):
            found.append([(int(best[row + i]), i) for i in range(m) if best[row + i] < n])
            row += m
    return found
