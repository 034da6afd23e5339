"""Checkpoints: one file with model, optimiser, schedule, progress, RNG, config and vocabularies.

Written to a temporary file and renamed, so a crash or a kill never leaves a broken
checkpoint under the final name; read with ``weights_only=True``, so loading runs no code
from the file.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import torch

from nmtkit import __version__
from nmtkit.data.text import PathLike, temp_file_beside
from nmtkit.data.vocab import Vocab, vocab_from_state
from nmtkit.errors import NmtkitError

FORMAT_VERSION = 1


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
    """Read a checkpoint onto the CPU without running code from it."""
    path = Path(path)
    if not path.is_file():
        raise NmtkitError(f"{path}: no such checkpoint")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for truncated or foreign files
        raise NmtkitError(f"{path}: not a readable nmtkit checkpoint ({type(e).__name__}: {str(e).splitlines()[0][:200]})") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT_VERSION or "model" not in ckpt:
        raise NmtkitError(f"{path}: not an nmtkit checkpoint (format {ckpt.get('format') if isinstance(ckpt, dict) else '?'})")
    return ckpt


def vocabs_of(ckpt: dict) -> tuple[Vocab, Vocab]:
    return vocab_from_state(ckpt["vocab"]["src"]), vocab_from_state(ckpt["vocab"]["tgt"])


def load_model(path: PathLike, device: Optional[torch.device] = None):
    """Model (in eval mode), source and target vocabularies, and config of a checkpoint."""
    from nmtkit.models import build_model

    ckpt = load_checkpoint(path)
    src_vocab, tgt_vocab = vocabs_of(ckpt)
    config = ckpt["config"]
    model = build_model(config, len(src_vocab), len(tgt_vocab))
    model.load_state_dict(ckpt["model"])
    model.to(device or torch.device("cpu")).eval()
    return model, src_vocab, tgt_vocab, config


def warm_start(model: torch.nn.Module, ckpt: dict) -> tuple[list[str], list[str], list[str]]:
    """Copy the parameters of ``ckpt`` whose name and shape match and zero the new ones that belong to
    the model's ``bridges``; return the (new, unused, zeroed) names."""
    source = ckpt["model"]
    own = model.state_dict()
    matched = {k: v for k, v in source.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(matched, strict=False)
    new = sorted(k for k in own if k not in matched)
    unused = sorted(k for k in source if k not in matched)
    bridges = set(getattr(model, "bridges", ()))
    zeroed = [k for k in new if bridges & set(k.split(".")[-2:-1])]  # the module's name, before ".weight"
    with torch.no_grad():
        for k in zeroed:
            model.get_parameter(k).zero_()
    return new, unused, zeroed
