"""Devices: choosing one, and recognising running out of its memory."""
from __future__ import annotations

import torch

from nmtkit.errors import NmtkitError


def pick_device(name: str) -> torch.device:
    """``auto`` is the first GPU if there is one, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise NmtkitError(f"--device {name}: no CUDA device is available", exit_code=2)
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise NmtkitError(f"--device {name}: there are only {torch.cuda.device_count()} CUDA devices", exit_code=2)
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise NmtkitError(f"--device {name}: no MPS device is available", exit_code=2)
    return device


def is_out_of_memory(e: BaseException) -> bool:
    """Whether an exception is a device (or host) allocation failure."""
    text = str(e)
    return isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in text or "can't allocate memory" in text
