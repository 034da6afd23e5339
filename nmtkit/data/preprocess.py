"""Text to corpus folder: vocabularies, length filter, HDF5 shards, manifest."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from nmtkit.data.shards import FORMAT_VERSION, MANIFEST, ShardWriter
from nmtkit.data.text import PathLike, check_parallel, decode_line, strip_newline
from nmtkit.data.vocab import SentencePieceVocab, Vocab, WordVocab, load_vocab, vocab_filename
from nmtkit.errors import NmtkitError
from nmtkit.progress import log, progress

VOCAB_KINDS = ("spm", "spm-unigram", "spm-bpe", "word")


@dataclass
class VocabSpec:
    """How to obtain the vocabularies: build ``kind`` of ``size``, or load files."""

    kind: str = "spm"
    size: int = 8000
    joint: Optional[bool] = None  # default: joint for SentencePiece, separate for words
    src_file: Optional[PathLike] = None
    tgt_file: Optional[PathLike] = None

    @classmethod
    def parse(cls, text: str, **kw) -> "VocabSpec":
        """Parse ``KIND:SIZE`` such as ``spm:8000``, ``spm-bpe:32000`` or ``word:30000``."""
        kind, _, size = text.partition(":")
        if kind not in VOCAB_KINDS or not size.isdigit() or int(size) < 8:
            raise NmtkitError(f"--vocab: expected KIND:SIZE with KIND one of {', '.join(VOCAB_KINDS)} "
                              f"and SIZE a number >= 8, got {text!r}", exit_code=2)
        return cls(kind=kind, size=int(size), **kw)


def parallel_paths(prefix: PathLike, src: str, tgt: str) -> tuple[Path, Path]:
    return Path(f"{prefix}.{src}"), Path(f"{prefix}.{tgt}")


def build_vocabs(spec: VocabSpec, train_src: Path, train_tgt: Path) -> tuple[Vocab, Vocab]:
    """Load or build the source and target vocabularies."""
    if spec.src_file or spec.tgt_file:
        if not (spec.src_file and spec.tgt_file):
            raise NmtkitError("--src-vocab and --tgt-vocab go together (give the same file twice for a joint vocabulary)",
                              exit_code=2)
        return load_vocab(spec.src_file), load_vocab(spec.tgt_file)
    joint = spec.joint if spec.joint is not None else spec.kind.startswith("spm")
    if spec.kind.startswith("spm"):
        model_type = "bpe" if spec.kind == "spm-bpe" else "unigram"
        log(f"training {'joint ' if joint else ''}SentencePiece {model_type} vocabulary of {spec.size}")
        if joint:
            v = SentencePieceVocab.train([train_src, train_tgt], spec.size, model_type)
            return v, v
        return (SentencePieceVocab.train([train_src], spec.size, model_type),
                SentencePieceVocab.train([train_tgt], spec.size, model_type))
    from nmtkit.data.text import iter_lines

    if joint:
        v = WordVocab.build(_chain(iter_lines(train_src), iter_lines(train_tgt)), spec.size)
        return v, v
    return WordVocab.build(iter_lines(train_src), spec.size), WordVocab.build(iter_lines(train_tgt), spec.size)


def _chain(*iters):
    for it in iters:
        yield from it


def _encode_split(name: str, src: Path, tgt: Path, n: int, vocabs: tuple[Vocab, Vocab], folder: Path,
                  max_len: Optional[int], shard_size: int) -> dict:
    """Stream one split into shards; training splits drop empty and over-long pairs (counted)."""
    writer = ShardWriter(folder, name, ["src", "tgt"], shard_size)
    dropped = {"too_long": 0, "empty": 0}
    filtering = name == "train"
    with progress() as bar, open(src, "rb") as fs, open(tgt, "rb") as ft:
        task = bar.add_task(f"encoding {name}", total=n, info="")
        for lineno, (rs, rt) in enumerate(zip(fs, ft), 1):
            s = vocabs[0].encode(decode_line(strip_newline(rs), str(src), lineno))
            t = vocabs[1].encode(decode_line(strip_newline(rt), str(tgt), lineno))
            if filtering and (not s or not t):
                dropped["empty"] += 1
            elif filtering and max_len and (len(s) > max_len or len(t) > max_len):
                dropped["too_long"] += 1
            else:
                writer.add(src=s, tgt=t)
            if lineno % 1000 == 0:
                bar.update(task, completed=lineno)
    shards = writer.close()
    kept = sum(s["sentences"] for s in shards)
    if kept == 0:
        raise NmtkitError(f"{src}: no sentence pair left after filtering (max length {max_len})")
    log(f"{name}: {kept} pairs in {len(shards)} shard(s)"
        + (f"; dropped {dropped['too_long']} longer than {max_len} tokens and {dropped['empty']} with an empty side"
           if filtering else ""))
    info = {"shards": shards, "sentences": kept, "lines": n}
    if filtering:
        info["dropped"] = dropped
    return info


def preprocess(out: PathLike, src_lang: str, tgt_lang: str, train: PathLike, valid: PathLike,
               test: Optional[PathLike] = None, vocab: Optional[VocabSpec] = None, max_len: Optional[int] = 50,
               shard_size: int = 100_000, overwrite: bool = False) -> Path:
    """Build a corpus folder from parallel text files ``PREFIX.SRC``/``PREFIX.TGT``.

    The folder is assembled under a temporary name and renamed at the end, so a failure
    leaves no half-written corpus behind.
    """
    out = Path(out)
    vocab = vocab or VocabSpec()
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        what = "a corpus" if (out / MANIFEST).exists() else "files"
        raise NmtkitError(f"{out}: output folder already holds {what}; use --overwrite to replace it", exit_code=1)
    splits = {"train": train, "valid": valid}
    if test:
        splits["test"] = test
    pairs = {k: parallel_paths(p, src_lang, tgt_lang) for k, p in splits.items()}
    counts = {k: check_parallel(*p) for k, p in pairs.items()}

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    try:
        vocabs = build_vocabs(vocab, *pairs["train"])
        names = {"src": vocab_filename(vocabs[0], "src"), "tgt": vocab_filename(vocabs[1], "tgt")}
        vocabs[0].save(tmp / names["src"])
        vocabs[1].save(tmp / names["tgt"])
        manifest = {
            "format": FORMAT_VERSION, "src_lang": src_lang, "tgt_lang": tgt_lang,
            "vocab": {**names, "src_size": len(vocabs[0]), "tgt_size": len(vocabs[1]), "kind": vocabs[0].kind},
            "options": {"max_len": max_len, "shard_size": shard_size,
                        "vocab": f"{vocab.kind}:{vocab.size}" if not vocab.src_file else str(vocab.src_file)},
            "splits": {},
        }
        for name, (src, tgt) in pairs.items():
            info = _encode_split(name, src, tgt, counts[name], vocabs, tmp, max_len, shard_size)
            if name != "train":  # raw text kept for BLEU and translation of held-out sets
                for key, path, lang in (("source", src, src_lang), ("reference", tgt, tgt_lang)):
                    shutil.copyfile(path, tmp / f"{name}.{lang}")
                    info[key] = f"{name}.{lang}"
            manifest["splits"][name] = info
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
