"""Devices: choosing one, and recognising running out of its memory."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import torch

from nmtkit.errors import NmtkitError


def pick_device(name: str) -> torch.device:
    """``auto`` is the first GPU if there is one, else the CPU; made ready for work (:func:`prepare`)."""
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name)
    check_available(device, name)
    prepare(device)
    return device


def check_available(device: torch.device, name: str) -> None:
    """That the device named ``name`` exists here (else a one-line error naming the option's value)."""
    if device.type == "cuda" and not torch.cuda.is_available():
        raise NmtkitError(f"--device {name}: no CUDA device is available", exit_code=2)
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise NmtkitError(f"--device {name}: there are only {torch.cuda.device_count()} CUDA devices", exit_code=2)
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise NmtkitError(f"--device {name}: no MPS device is available", exit_code=2)


def is_out_of_memory(e: BaseException) -> bool:
    """Whether an exception is a device (or host) allocation failure."""
    text = str(e)
    return isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in text or "can't allocate memory" in text


def native_bfloat16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AVX512-BF16 or AMX); elsewhere PyTorch emulates it, slower than
    float32 (and oneDNN's LSTM has no bfloat16 kernel). Read from PyTorch, or /proc/cpuinfo where PyTorch cannot
    tell."""
    get_capabilities = getattr(torch.cpu, "get_capabilities", None)
    if get_capabilities is not None:
        capabilities = get_capabilities()
        return bool(capabilities.get("avx512_bf16") or capabilities.get("amx_bf16"))
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def autocast_dtype(device: torch.device) -> Optional[torch.dtype]:
    """The type mixed precision computes in on ``device``: bfloat16 on CUDA GPUs that support it (Ampere and later:
    no loss scaling needed), float16 (with loss scaling) on older ones, bfloat16 on other accelerators and on CPUs
    that have it natively; None (float32) on other CPUs, where emulated bfloat16 is slower."""
    if device.type == "cuda":  # natively from compute capability 8 (Ampere) on; emulated before, and slow
        return torch.bfloat16 if torch.cuda.get_device_capability(device)[0] >= 8 else torch.float16
    return None if device.type == "cpu" and not native_bfloat16() else torch.bfloat16


def prepare(device: torch.device) -> None:
    """Settings for fast work on ``device``, before its first use: on CUDA, TF32 for float32 matrix products and
    convolutions (Ampere and later; 10 mantissa bits, as PyTorch's "high" precision); attention without cuDNN's
    kernels (the process's setting); and, unless the user set PYTORCH_CUDA_ALLOC_CONF, the caching allocator's
    expandable segments (batches of ever new shapes then reuse memory instead of fragmenting it). Nothing
    elsewhere."""
    if device.type != "cuda":
        return
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    # PyTorch 2.11 gives attention with a padding mask to cuDNN first on recent GPUs, and cuDNN builds an execution
    # plan for every new (batch, length) shape, reported at about half a second forward and as much backward (issue
    # 33: an H200 trained the Transformer base at a tenth of its later speed in epoch 1, where most batch shapes are
    # new). The memory-efficient kernel takes masks without per-shape plans.
    torch.backends.cuda.enable_cudnn_sdp(False)
    if "PYTORCH_CUDA_ALLOC_CONF" not in os.environ and not torch.cuda.is_initialized():
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"


def peak_memory_gb(device: torch.device) -> Optional[float]:
    """The most memory tensors have held on a CUDA ``device`` so far, in GB (a host-side counter: no device sync);
    None elsewhere."""
    return round(torch.cuda.max_memory_allocated(device) / 1e9, 3) if device.type == "cuda" else None
