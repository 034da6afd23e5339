"""Checkpoints: one file with model, optimiser, schedule, progress, RNG, config, corpus streams and vocabularies.

Written to a temporary file and renamed, so a crash or a kill never leaves a broken
checkpoint under the final name; read with ``weights_only=True``, so loading runs no code
from the file. Format 1 files (nmtkit 0.1.0) are read through :func:`upgrade`.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from nmtkit import __version__
from nmtkit.data.streams import TARGET, TOKENS, CorpusMeta, StreamInfo
from nmtkit.data.text import PathLike, temp_file_beside
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
RNN_DECODER_ARCHS = ("rnnsearch", "target-attn", "ftatt-rnn", "rtatt-rnn", "bitatt-rnn")


def _rename(name: str, rnn_decoder: bool) -> str:
    for pattern, new in RENAMES if rnn_decoder else RENAMES[:1]:
        name = re.sub(pattern, new, name)
    return name


def upgrade(ckpt: dict) -> dict:
    """A format 1 checkpoint in format 2's terms: parameter names, corpus streams, schedule and early stopping."""
    if ckpt.get("format") != 1:
        return ckpt
    rnn = ckpt.get("config", {}).get("arch") in RNN_DECODER_ARCHS
    names = lambda d: {_rename(k, rnn): v for k, v in d.items()}
    out = {**ckpt, "format": FORMAT_VERSION, "model": names(ckpt["model"])}
    if "param_names" in ckpt:
        out["param_names"] = [_rename(k, rnn) for k in ckpt["param_names"]]
    vocab = ckpt["vocab"]
    out["corpus"] = CorpusMeta({side: StreamInfo(TOKENS, len(vocab_from_state(vocab[side])))
                                for side in ("src", TARGET)}).state()
    if "schedule" in ckpt:
        old = ckpt["schedule"]
        out["schedule"] = {"lr": old["lr"], "last": old["last"]}
        out["stopping"] = {"best": old["best"], "bad": old["bad"]}
    return out


def save_checkpoint(path: PathLike, payload: dict) -> None:
    """Atomically write ``payload`` (plus format and version stamps) to ``path``."""
    tmp = temp_file_beside(Path(path))
    try:
        torch.save({"format": FORMAT_VERSION, "nmtkit_version": __version__, **payload}, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_checkpoint(path: PathLike) -> dict:
    """Read a checkpoint onto the CPU without running code from it (format 1 upgraded)."""
    path = Path(path)
    if not path.is_file():
        raise NmtkitError(f"{path}: no such checkpoint")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for truncated or foreign files
        raise NmtkitError(f"{path}: not a readable nmtkit checkpoint ({type(e).__name__}: {str(e).splitlines()[0][:200]})") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") not in (1, FORMAT_VERSION) or "model" not in ckpt:
        raise NmtkitError(f"{path}: not an nmtkit checkpoint (format {ckpt.get('format') if isinstance(ckpt, dict) else '?'})")
    return upgrade(ckpt)


def checkpoint_vocabs(ckpt: dict) -> dict[str, Vocab]:
    """The vocabulary of every text stream a checkpoint's model was trained on."""
    return {name: vocab_from_state(state) for name, state in ckpt["vocab"].items()}


def checkpoint_meta(ckpt: dict) -> CorpusMeta:
    """The corpus streams (kinds and sizes) a checkpoint's model was built for."""
    return CorpusMeta.from_state(ckpt["corpus"])
