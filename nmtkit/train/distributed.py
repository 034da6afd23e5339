"""torch.distributed set-up for multi-process training under torchrun (DDP)."""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from nmtkit.errors import NmtkitError
from nmtkit.progress import warn


@dataclass
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def init_distributed(device: torch.device, timeout_s: float) -> DistInfo:
    """Join the process group that torchrun describes in the environment (if any).

    Uses NCCL on GPUs and gloo on CPUs. If the group cannot form within ``timeout_s``
    seconds (a rank missing, a wrong address), raises an NmtkitError saying so instead of
    hanging.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    rank, local = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    backend = "nccl" if device.type == "cuda" else "gloo"
    try:
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=timeout_s))
        dist.barrier()
    except Exception as e:  # DistStoreError, RuntimeError from gloo/nccl, timeouts
        addr = f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
        raise NmtkitError(f"rank {rank} of {world}: the process group at {addr} did not form within "
                          f"{timeout_s:g} s (--dist-timeout); are all ranks started? "
                          f"({type(e).__name__}: {str(e).splitlines()[0][:160]})") from None
    return DistInfo(rank, world, local)


def process_device(device: torch.device, name: str, info: DistInfo) -> torch.device:
    """The device this process trains on, ``device`` being the one ``--device name`` chose: under torchrun on GPUs,
    the GPU of the process' local rank (a one-line error where the machine has fewer); on the CPU, ``device``, with
    a warning (once, from rank 0) where ``auto`` found no GPU, as when ``--nproc-per-node N`` (a recipe's
    ``--gpus N``) is given on a machine without one: the processes then share its CPU cores."""
    if not info.enabled:
        return device
    if device.type == "cuda":
        count = torch.cuda.device_count()
        if info.local_rank >= count:
            raise NmtkitError(f"rank {info.rank} of {info.world_size}: torchrun started more processes on this "
                              f"machine than it has CUDA devices ({count}); give --nproc-per-node {count} or fewer",
                              exit_code=2)
        return torch.device("cuda", info.local_rank)
    if name == "auto" and info.is_main:
        warn(f"--device auto: no GPU found, so the run's {info.world_size} processes train on CPUs (give --device "
             "cpu to say that this is meant)")
    return device


def broadcast(obj, info: DistInfo):
    """Rank 0's value of a small picklable object, on every rank."""
    if not info.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gathered(obj, info: DistInfo) -> list:
    """Every rank's value of a small picklable object, in rank order, on every rank (``[obj]`` for one process)."""
    if not info.enabled:
        return [obj]
    values: list = [None] * info.world_size
    dist.all_gather_object(values, obj)
    return values


def leave(info: DistInfo) -> None:
    """Leave the process group at once, after a failure of this process: not at :func:`shutdown`'s barrier, which
    the others, waiting in an update's exchange this one never reaches, would not meet (the run hung until
    ``--dist-timeout``). The others' exchange then fails, and torchrun stops them."""
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()


def lost_peer(error: BaseException, info: DistInfo) -> NmtkitError | None:
    """The one-line error of a process whose collective failed because another process of the run stopped (that
    one's own error says why), or None for any other error."""
    if not info.enabled or not isinstance(error, (dist.DistError, RuntimeError)):
        return None
    text = str(error)
    if not any(sign in text for sign in ("Connection closed by peer", "Connection reset by peer", "Broken pipe",
                                         "DistNetworkError", "NCCL communicator was aborted")):
        return None
    return NmtkitError(f"rank {info.rank} of {info.world_size}: another process of the run stopped (its own error "
                       f"says why); stopping too ({text.splitlines()[0][:120]})")


def shutdown(info: DistInfo) -> None:
    """Leave the process group once every rank is done with it: a rank that leaves while another still writes its
    checkpoint can abort that rank's gloo threads at exit (SIGABRT after a finished run)."""
    if info.enabled and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
