"""Checkpoints: one file with model, optimiser, schedule, progress, RNG, config, corpus streams and vocabularies.

Written to a temporary file and renamed, so a crash or a kill never leaves a broken
checkpoint under the final name; read with ``weights_only=True``, so loading runs no code
from the file. Format 1 files (nmtkit 0.1.0) are read through :func:`upgrade`.
"""
from __future__ import annotations

import io
import os
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from nmtkit import __version__
from nmtkit.data.output_form import EDITS_RECORD
from nmtkit.data.streams import TARGET, TOKENS, CorpusMeta, StreamInfo
from nmtkit.data.text import PathLike, atomic_output
from nmtkit.data.vocab import Vocab, vocab_from_state
from nmtkit.errors import NmtkitError

FORMAT_VERSION = 2

# format 1 -> 2: the source embeddings moved into the text encoder; the RNN decoders were split into
# a cell, its input and context maps, and a deep-output module
RENAMES = [
    (r"^src_emb\.", "encoder.embedding."),
    (r"^(decoder|reverse)\.emb_gates\.", r"\1.cell.inputs.embedding."),
    (r"^(decoder|reverse)\.extra_gates\.", r"\1.cell.inputs.extra."),
    (r"^(decoder|reverse)\.ctx_gates\.", r"\1.cell.contexts.source."),
    (r"^(decoder|reverse)\.target_gates\.", r"\1.cell.contexts.target."),
    (r"^(decoder|reverse)\.hidden_proj\.", r"\1.cell.hidden."),
    (r"^(decoder|reverse)\.readout\.", r"\1.readout.base."),
    (r"^(decoder|reverse)\.target_readout\.", r"\1.readout.extras.target."),
    (r"^(decoder|reverse)\.extra_readout\.", r"\1.readout.extras.extra."),
    (r"^(decoder|reverse)\.output\.", r"\1.readout.output."),
]


def _rename(name: str) -> str:
    """A format 1 parameter name in format 2 (the patterns name modules only the RNN decoders had)."""
    for pattern, new in RENAMES:
        name = re.sub(pattern, new, name)
    return name


def upgrade(ckpt: dict) -> dict:
    """A format 1 checkpoint in format 2's terms: parameter names, corpus streams, schedule and early stopping."""
    if ckpt.get("format") != 1:
        return ckpt
    out = {**ckpt, "format": FORMAT_VERSION, "model": {_rename(k): v for k, v in ckpt["model"].items()}}
    if "param_names" in ckpt:
        out["param_names"] = [_rename(k) for k in ckpt["param_names"]]
    vocab = ckpt.get("vocab", {})
    if {"src", TARGET} <= set(vocab):
        out["corpus"] = CorpusMeta({side: StreamInfo(TOKENS, len(vocab_from_state(vocab[side])))
                                    for side in ("src", TARGET)}).state()
    if "schedule" in ckpt:
        old = ckpt["schedule"]
        out["schedule"] = {"lr": old["lr"], "last": old["last"]}
        out["stopping"] = {"best": old["best"], "bad": old["bad"]}
    return out


def save_checkpoint(path: PathLike, payload: dict) -> None:
    """Atomically and durably write ``payload`` (plus format and version stamps) to ``path``: the previous file
    stays until the new one is complete on disk; a full disk is one line naming ``path``."""
    buffer = io.BytesIO()  # serialised first, so that a failed write has the OS's errno, not torch's "unexpected pos"
    torch.save({"format": FORMAT_VERSION, "nmtkit_version": __version__, **payload}, buffer)
    with atomic_output(path, "wb") as f:
        f.write(buffer.getbuffer())
        f.flush()
        os.fsync(f.fileno())


#: what a checkpoint must hold to be decoded with (``load_checkpoint(path, FOR_DECODING)``)
FOR_DECODING = ("model", "config", "vocab", "corpus")
#: the corpus' records that decoding needs when present, as its manifest's ``options`` hold them: how image features
#: were made (captioning), the output form (:class:`nmtkit.data.output_form.OutputForm`)
CORPUS_RECORDS = ("images", EDITS_RECORD)


HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"  #: the first bytes of an HDF5 file


def unreadable(e: BaseException, head: bytes) -> str:
    """Why ``torch.load`` failed, in a few words (never its advice to load the file unsafely), with the file's first
    bytes ``head`` to tell what else it is: an HDF5 file, one not saved by PyTorch (neither a zip archive nor a
    pickle), or a PyTorch archive cut short."""
    if head == HDF5_SIGNATURE:
        return "it is an HDF5 file, such as a corpus shard or an attention file"
    if head and head[:1] != b"\x80" and not head.startswith(b"PK"):
        return "it is not a file PyTorch saved: text, or another format"
    text = str(e)
    if isinstance(e, EOFError) or "ran out of input" in text.lower():
        return "the file is empty or cut short"
    if "weights only load failed" in text.lower() or "weights_only" in text:
        return "it holds Python objects beyond tensors and plain values, and nmtkit runs no code from a checkpoint"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    why = f"{type(e).__name__}: {first[:200]}" if first else type(e).__name__
    return f"a PyTorch file cut short or damaged: {why}" if head.startswith(b"PK") else why


def load_checkpoint(path: PathLike, require: tuple[str, ...] = ("model", "config")) -> dict:
    """Read a checkpoint onto the CPU without running code from it (format 1 upgraded); it must hold the keys
    ``require``."""
    path = Path(path)
    if path.is_dir():
        raise NmtkitError(f"{path}: a folder, not a checkpoint")
    if not path.is_file():
        raise NmtkitError(f"{path}: no such checkpoint")
    with ThreadPoolExecutor(1, thread_name_prefix="nmtkit-crc") as checking:  # (both read the file, GIL released)
        crc = checking.submit(check_crc, path)
        try:
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # torch raises many types for truncated or foreign files
            crc.result()  # (damaged bytes named as such first)
            with open(path, "rb") as f:
                head = f.read(8)
            raise NmtkitError(f"{path}: not a readable nmtkit checkpoint ({unreadable(e, head)})") from None
        crc.result()
    if not isinstance(ckpt, dict) or ckpt.get("format") not in (1, FORMAT_VERSION) or "model" not in ckpt:
        raise NmtkitError(f"{path}: not an nmtkit checkpoint (format {ckpt.get('format') if isinstance(ckpt, dict) else '?'})")
    ckpt = upgrade(ckpt)
    missing = [key for key in require if key not in ckpt]
    if missing or "arch" not in ckpt.get("config", {"arch": ""}):
        raise NmtkitError(f"{path}: an incomplete nmtkit checkpoint (no {', '.join(missing) or 'arch in its config'})")
    return ckpt


def check_crc(path: Path) -> None:
    """A checkpoint's bytes as written: each member of its zip archive matches the CRC-32 recorded with it (which
    ``torch.load`` does not check: changed bytes in a tensor would load as other weights), else a one-line error.
    A file that is no zip archive (cut short, or not a checkpoint) is left to ``torch.load`` to refuse."""
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError):  # (RuntimeError: an encrypted member)
        return
    if damaged is not None:
        raise NmtkitError(f"{path}: damaged: its {damaged} does not match the checksum written with it (changed since "
                          "it was saved)")


def same_state(a: object, b: object) -> bool:
    """Equality of plain values and tensors (a SentencePiece vocabulary's state holds its model as bytes)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    return a == b


def first_mismatch(expected: dict, saved: dict) -> str:
    """The first difference between a model's state dict and a checkpoint's ('' if none): a missing or
    unexpected parameter, or one of another shape, with both shapes."""
    for name, tensor in expected.items():
        if name not in saved:
            return f"it has no {name}"
        if tuple(saved[name].shape) != tuple(tensor.shape):
            return f"{name} is {tuple(saved[name].shape)} there and {tuple(tensor.shape)} in the configured model"
    extra = [name for name in saved if name not in expected]
    return f"it has {extra[0]}, which the configured model lacks" if extra else ""


def checkpoint_vocabs(ckpt: dict) -> dict[str, Vocab]:
    """The vocabulary of every text stream a checkpoint's model was trained on."""
    return {name: vocab_from_state(state) for name, state in ckpt["vocab"].items()}


def checkpoint_meta(ckpt: dict) -> CorpusMeta:
    """The corpus streams (kinds and sizes) a checkpoint's model was built for."""
    return CorpusMeta.from_state(ckpt["corpus"])


STEP_FILE = re.compile(r"step-(\d+)\.pt")


def step_file(step: int) -> str:
    """The name of the checkpoint a run keeps of the validation at ``step`` (``train --keep-checkpoints``)."""
    return f"step-{step}.pt"


def kept_checkpoints(run: PathLike) -> list[Path]:
    """The step checkpoints a run folder keeps, oldest first."""
    found = [(int(m.group(1)), p) for p in Path(run).iterdir() if (m := STEP_FILE.fullmatch(p.name))]
    return [p for _, p in sorted(found)]
