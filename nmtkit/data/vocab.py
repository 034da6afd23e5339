"""Vocabularies: SentencePiece (unigram or BPE) and word level.

Every vocabulary uses the same four special ids, so models and search never ask which
kind they were given: ``<pad>`` 0, ``<unk>`` 1, ``<s>`` 2, ``</s>`` 3.
"""
from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch

from nmtkit.data.text import PathLike, check_readable, iter_lines
from nmtkit.errors import NmtkitError

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]
#: the most lines a SentencePiece model trains on by default: its training holds them in memory (about
#: 1.2 GB for 500,000 lines of 84 characters; bench/README.md "Corpora of millions of sentences")
SPM_SAMPLE = 500_000
SPM_LONGEST = 4192  #: bytes: SentencePiece trains on no longer line (its own default, said in errors)


class Vocab:
    """Maps text to ids and back. Subclasses implement the segmentation."""

    kind = ""
    pad_id, unk_id, bos_id, eos_id = PAD, UNK, BOS, EOS

    def __len__(self) -> int:
        raise NotImplementedError

    def segment(self, text: str) -> list[str]:
        """Tokens (pieces or words) of a line, as the model sees them."""
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        """Ids of a line, without BOS/EOS."""
        raise NotImplementedError

    def decode(self, ids: Sequence[int]) -> str:
        """Detokenised text of ids; special ids other than ``<unk>`` are dropped."""
        raise NotImplementedError

    def id_to_token(self, ids: Sequence[int]) -> list[str]:
        """The token string of each id."""
        raise NotImplementedError

    def word_index(self, ids: Sequence[int]) -> list[int]:
        """The word (from 0, as the detokenised text splits at spaces) that each token belongs to, -1 for a token of
        no word: each token is a word of its own (word vocabularies; subword vocabularies override this)."""
        return list(range(len(ids)))

    def input_word_index(self, ids: Sequence[int]) -> list[int]:
        """The word (from 0) that each token of an input belongs to, as the input's text splits at spaces (where an
        output's words are those of its decoded text: :meth:`word_index`)."""
        return self.word_index(ids)

    def state(self) -> dict:
        """A dict of plain values and tensors that :func:`vocab_from_state` rebuilds it from."""
        raise NotImplementedError

    def save(self, path: PathLike) -> None:
        """Write the vocabulary in its native file format."""
        raise NotImplementedError


class WordVocab(Vocab):
    """Whitespace-tokenised words; anything outside the list is ``<unk>``."""

    kind = "word"

    def __init__(self, tokens: Sequence[str]):
        tokens = list(tokens)
        if tokens[:4] != SPECIALS:
            tokens = SPECIALS + [t for t in tokens if t not in SPECIALS]
        self.tokens = tokens
        # <pad>, <s> and </s> in a line are text, which no word of the list is: <unk> (never a control id)
        self.index = {t: i for i, t in enumerate(tokens) if i not in (PAD, BOS, EOS)}

    def __len__(self) -> int:
        return len(self.tokens)

    def segment(self, text: str) -> list[str]:
        return text.split()

    def encode(self, text: str) -> list[int]:
        get = self.index.get
        return [get(w, UNK) for w in text.split()]

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.tokens[i] for i in ids if i == UNK or i >= 4)

    def id_to_token(self, ids: Sequence[int]) -> list[str]:
        return [self.tokens[i] for i in ids]

    def state(self) -> dict:
        return {"kind": self.kind, "tokens": list(self.tokens)}

    def save(self, path: PathLike) -> None:
        Path(path).write_text("".join(t + "\n" for t in self.tokens), encoding="utf-8")

    @classmethod
    def load(cls, path: PathLike) -> "WordVocab":
        """Read one token per line; a ``token<TAB>count`` line keeps the token only. A line of more than one word
        (a text file given for a word list), a count that is not a whole number (SentencePiece's ``.vocab``, whose
        pieces have log-probabilities: its ``.model`` is the vocabulary) or a token listed twice is a one-line error
        naming the line."""
        first: dict[str, int] = {}
        for lineno, line in enumerate(iter_lines(check_readable(path)), 1):
            if not line.strip():
                continue
            token, _, count = (field.strip() for field in line.partition("\t"))
            if not token or any(c.isspace() for c in token):
                raise NmtkitError(f"{path}:{lineno}: {token!r} is not one word; a word list holds one a line (WORD, or "
                                  "WORD<TAB>COUNT)")
            if count and not count.isdigit():
                spm = f"; a SentencePiece .vocab (pieces and log-probabilities)? give its model, " \
                      f"{Path(path).with_suffix('.model')}" if count.startswith("-") else ""
                raise NmtkitError(f"{path}:{lineno}: {count!r} is not a count; a word list holds WORD or WORD<TAB>COUNT "
                                  f"a line{spm}")
            if token in first:
                raise NmtkitError(f"{path}:{lineno}: {token!r} is listed again (first on line {first[token]})")
            first[token] = lineno
        if not first:
            raise NmtkitError(f"{path}: no word in it (a word list holds one a line: WORD, or WORD<TAB>COUNT)")
        return cls(list(first))

    @classmethod
    def build(cls, lines: Iterable[str], size: int) -> "WordVocab":
        """The ``size`` most frequent words (specials included in the count), ties by first seen; a special token
        written in the text (``<unk>``) is the special, not a word of its own."""
        counts: Counter = Counter()
        for line in lines:
            counts.update(line.split())
        for special in SPECIALS:
            counts.pop(special, None)
        words = [w for w, _ in counts.most_common(max(0, size - len(SPECIALS)))]
        return cls(words)


class SentencePieceVocab(Vocab):
    """A SentencePiece model; its own special pieces are mapped onto the shared special ids."""

    kind = "spm"

    def __init__(self, model_proto: bytes):
        import sentencepiece as spm

        self.proto = bytes(model_proto)
        self.sp = spm.SentencePieceProcessor(model_proto=self.proto)
        n = self.sp.get_piece_size()
        to_ours = np.empty(n, dtype=np.int64)
        to_spm = [self.sp.unk_id()] * 4
        for i in range(n):
            if self.sp.is_unknown(i):
                to_ours[i] = UNK
            elif i == self.sp.bos_id():
                to_ours[i] = BOS
            elif i == self.sp.eos_id():
                to_ours[i] = EOS
            elif i == self.sp.pad_id() or self.sp.is_control(i):
                to_ours[i] = PAD
            else:
                to_ours[i] = len(to_spm)
                to_spm.append(i)
        self.to_ours = to_ours
        self.to_spm = np.asarray(to_spm, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.to_spm)

    def segment(self, text: str) -> list[str]:
        return self.sp.encode(text, out_type=str)

    def encode(self, text: str) -> list[int]:
        return self.to_ours[self.sp.encode(text)].tolist()

    def decode(self, ids: Sequence[int]) -> str:
        keep = [i for i in ids if i == UNK or i >= 4]
        return self.sp.decode(self.to_spm[keep].tolist()) if keep else ""

    def id_to_token(self, ids: Sequence[int]) -> list[str]:
        return [SPECIALS[i] if i < 4 else self.sp.id_to_piece(int(self.to_spm[i])) for i in ids]

    def word_index(self, ids: Sequence[int]) -> list[int]:
        """The word of each piece as decoding splits the text (``<unk>`` is a word of its own, as decoding writes
        it); a lone ``▁`` goes with the word it opens; -1 for each piece of an output that decodes to no word at all
        (lone ``▁`` pieces alone)."""
        words = len(self.decode(ids).split())
        index = [max(0, len(self.decode(ids[:k + 1]).split()) - 1) if words else -1 for k in range(len(ids))]
        pieces = self.id_to_token(ids)
        for k in range(len(ids) - 2, -1, -1):
            if pieces[k] == "\u2581":
                index[k] = index[k + 1]
        return index

    def input_word_index(self, ids: Sequence[int]) -> list[int]:
        """A piece opening with ``▁`` (SentencePiece's mark of a space before it) opens a word of the input; the
        others, ``<unk>`` among them, go on with the word before (decoded, an ``<unk>`` is a word of its own, `` ⁇ ``,
        and :meth:`word_index` would count words past the input's)."""
        index, word = [], -1
        for piece in self.id_to_token(ids):
            word += piece.startswith("\u2581") or word < 0
            index.append(word)
        return index

    def state(self) -> dict:
        return {"kind": self.kind, "model": torch.frombuffer(bytearray(self.proto), dtype=torch.uint8)}

    def save(self, path: PathLike) -> None:
        Path(path).write_bytes(self.proto)

    @classmethod
    def load(cls, path: PathLike) -> "SentencePieceVocab":
        p = check_readable(path)
        try:
            return cls(p.read_bytes())
        except RuntimeError as e:
            raise NmtkitError(f"{p}: not a SentencePiece model ({e})") from None

    @classmethod
    def train(cls, files: Sequence[PathLike], size: int, model_type: str = "unigram",
              character_coverage: float = 0.9995, max_sentences: int = SPM_SAMPLE, seed: int = 1) -> "SentencePieceVocab":
        """Train on text files; at most ``max_sentences`` lines are sampled, so memory stays bounded."""
        import sentencepiece as spm

        buf = io.BytesIO()
        spm.set_random_generator_seed(seed)
        try:
            spm.SentencePieceTrainer.train(
                input=[str(f) for f in files], model_writer=buf, vocab_size=size, model_type=model_type,
                character_coverage=character_coverage, pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS,
                input_sentence_size=max_sentences, shuffle_input_sentence=True, hard_vocab_limit=False,
                num_threads=2, minloglevel=2, train_extremely_large_corpus=False, max_sentence_length=SPM_LONGEST,
            )
        except RuntimeError as e:
            if "sentences_.empty()" in str(e):  # (what it says of a text it read nothing of)
                raise NmtkitError(f"SentencePiece training failed: no line of {', '.join(map(str, files))} could be "
                                  f"used (it skips empty lines and lines over {SPM_LONGEST:,} bytes)") from None
            raise NmtkitError(f"SentencePiece training failed: {e}") from None
        return cls(buf.getvalue())


def load_vocab(path: PathLike) -> Vocab:
    """Load a vocabulary file: a SentencePiece ``.model`` or a word list (one token per line; ``.txt``, as a corpus
    folder names them); a file of another name is a SentencePiece model where its first bytes hold a NUL (text
    does not; a word of a corpus may, so a ``.txt`` file is never taken for a model)."""
    p = check_readable(path)
    with open(p, "rb") as f:
        head = f.read(64)
    if p.suffix == ".model" or (p.suffix != ".txt" and b"\x00" in head):
        return SentencePieceVocab.load(p)
    return WordVocab.load(p)


def vocab_from_state(state: dict) -> Vocab:
    """Rebuild a vocabulary from :meth:`Vocab.state` (as stored in checkpoints)."""
    if state["kind"] == "spm":
        return SentencePieceVocab(state["model"].numpy().tobytes())
    return WordVocab(state["tokens"])


def vocab_filename(vocab: Vocab, side: str) -> str:
    """File name of a vocabulary inside a corpus folder."""
    return f"vocab.{side}." + ("model" if vocab.kind == "spm" else "txt")
