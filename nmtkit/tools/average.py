"""Checkpoint averaging: the mean of several checkpoints' parameters, as fairseq's ``average_checkpoints`` and
OpenNMT-py's ``average_models`` compute it (Vaswani et al. 2017 average the last checkpoints of a run)."""
from __future__ import annotations

from typing import Sequence

import torch

from nmtkit.checkpoint import CORPUS_RECORDS, FOR_DECODING, first_mismatch, load_checkpoint
from nmtkit.data.text import PathLike
from nmtkit.errors import NmtkitError


def average_checkpoints(paths: Sequence[PathLike]) -> dict:
    """A decoding checkpoint whose parameters are the mean of those of ``paths`` (config, corpus and
    vocabularies from the last); they must be one architecture with parameters of the same names and shapes."""
    if not paths:
        raise NmtkitError("average: no checkpoints given", exit_code=2)
    last = load_checkpoint(paths[-1], FOR_DECODING)
    total = {k: v.double() if v.is_floating_point() else v for k, v in last["model"].items()}
    for path in paths[:-1]:
        ckpt = load_checkpoint(path, FOR_DECODING)
        if ckpt["config"]["arch"] != last["config"]["arch"]:
            raise NmtkitError(f"{path}: a {ckpt['config']['arch']} model; {paths[-1]} is {last['config']['arch']}",
                              exit_code=2)
        mismatch = first_mismatch(last["model"], ckpt["model"]) or first_mismatch(ckpt["model"], last["model"])
        if mismatch:
            raise NmtkitError(f"{path}: its parameters do not match those of {paths[-1]}: {mismatch}", exit_code=2)
        for k, v in ckpt["model"].items():
            if v.is_floating_point():
                total[k] += v.double()
            elif not torch.equal(v, total[k]):
                raise NmtkitError(f"{path}: {k} (not a parameter to average) differs from {paths[-1]}'s", exit_code=2)
    model = {k: (v / len(paths)).to(last["model"][k].dtype) if v.is_floating_point() else v for k, v in total.items()}
    kept = [key for key in (*FOR_DECODING, *CORPUS_RECORDS) if key != "model" and key in last]
    return {key: last[key] for key in kept} | {"model": model, "averaged": [str(p) for p in paths]}
