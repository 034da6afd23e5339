"""Checkpoint averaging: the mean of several checkpoints' parameters, as fairseq's ``average_checkpoints`` and
OpenNMT-py's ``average_models`` compute it (Vaswani et al. 2017 average the last checkpoints of a run)."""
from __future__ import annotations

from typing import Sequence

import torch

from nmtkit.checkpoint import CORPUS_RECORDS, FOR_DECODING, first_mismatch, load_checkpoint, same_state
from nmtkit.data.text import PathLike
from nmtkit.errors import NmtkitError
from nmtkit.models.registry import get_spec, option_values


def _as_made(record: object) -> object:
    """A corpus record as it bears on the model: image features made with weights known by their SHA-256, wherever
    the file was."""
    if isinstance(record, dict) and record.get("weights_sha256"):
        return {k: v for k, v in record.items() if k != "weights"}
    return record


def built_differently(ckpt: dict, other: dict) -> str:
    """How two checkpoints' models differ beyond their weights ('' if they do not): the architecture, one of its
    options (e.g. heads, which changes no shape), a stream's vocabulary, the corpus' streams or records."""
    arch = ckpt["config"]["arch"]
    if arch != other["config"]["arch"]:
        return f"--arch {arch} against {other['config']['arch']}"
    built = [o for o in get_spec(arch).options if not o.training_only]  # dropout differs in one resumed run
    options, theirs = option_values(ckpt["config"], built), option_values(other["config"], built)
    for name, value in options.items():
        if value != theirs[name]:
            return f"--{name.replace('_', '-')} {value} against {theirs[name]}"
    for stream in sorted(set(ckpt["vocab"]) | set(other["vocab"])):
        if not same_state(ckpt["vocab"].get(stream), other["vocab"].get(stream)):
            return f"the vocabularies of {stream} differ"
    for key in ("corpus", *CORPUS_RECORDS):
        if not same_state(_as_made(ckpt.get(key)), _as_made(other.get(key))):
            return f"the corpora's records of {key} differ"
    return ""


def average_checkpoints(paths: Sequence[PathLike]) -> dict:
    """A decoding checkpoint whose parameters are the mean of those of ``paths`` (config, corpus and
    vocabularies from the last); they must be one architecture with parameters of the same names and shapes."""
    if not paths:
        raise NmtkitError("average: no checkpoints given", exit_code=2)
    last = load_checkpoint(paths[-1], FOR_DECODING)
    total = {k: v.double() if v.is_floating_point() else v for k, v in last["model"].items()}
    check_finite(paths[-1], last["model"])
    for path in paths[:-1]:
        ckpt = load_checkpoint(path, FOR_DECODING)
        check_finite(path, ckpt["model"])
        built = built_differently(ckpt, last)
        if built:
            raise NmtkitError(f"{path} and {paths[-1]}: models built differently ({built}); only checkpoints of "
                              "one model can be averaged", exit_code=2)
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


def is_average(path: PathLike) -> bool:
    """Whether ``path`` is a checkpoint that :func:`average_checkpoints` made (its tensors are not read)."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # (not a file PyTorch saved, or not one of its archives: not an average)
        return False
    return isinstance(ckpt, dict) and "averaged" in ckpt


def check_finite(path: PathLike, weights: dict[str, torch.Tensor]) -> None:
    """Refuse, naming ``path`` and the parameter, a checkpoint with a parameter that is not finite (NaN or infinite:
    the average would be too)."""
    for name, value in weights.items():
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise NmtkitError(f"{path}: parameter {name} is not finite (NaN or infinite); leave this checkpoint out",
                              exit_code=2)
