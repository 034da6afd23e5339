"""``train --profile A:B``: updates A to B (counted from 1, both included) run under ``torch.profiler``, and what
they spent their time on goes into the save folder: ``profile.txt`` (per update: wall time, the device's kernel
time, kernel launches and host synchronisations; then the operations by their own device time, or host time on a
CPU) and ``profile.json`` (the trace, for Perfetto or chrome://tracing). For finding what keeps a GPU waiting."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Optional, Sequence

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity

from nmtkit.config import Pattern
from nmtkit.data.text import atomic_output
from nmtkit.errors import NmtkitError

#: the values ``--profile`` allows
PROFILE = Pattern(r"|[1-9][0-9]*:[1-9][0-9]*", "A:B, the first and the last update to profile (from 1)", "A:B")
_LAUNCHES = ("cudaLaunch", "cuLaunch")  #: host-side names of a kernel's launch (runtime and driver API)
_SYNCS = ("Synchronize",)  #: host waits: cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize


def profiled_updates(spec: str, max_steps: int = 0) -> Optional[range]:
    """The updates ``--profile A:B`` names (None for ``""``); a one-line error if B comes before A, or A after
    ``max_steps`` (0: no limit)."""
    if not spec:
        return None
    first, last = map(int, spec.split(":"))
    if last < first:
        raise NmtkitError(f"--profile {spec}: the last update comes before the first", exit_code=2)
    if max_steps and first > max_steps:
        raise NmtkitError(f"--profile {spec}: past --max-steps {max_steps}, so nothing would be profiled", exit_code=2)
    return range(first, last + 1)


class UpdateProfiler:
    """Starts ``torch.profiler`` before the first of ``updates`` (:func:`profiled_updates`; None: none) and writes
    its findings after the last (or at :meth:`close`, where training stops sooner). The trainer calls
    :meth:`before` and :meth:`after` around each update."""

    def __init__(self, updates: Optional[range], save_dir: Path, device: torch.device):
        self.updates, self.save_dir, self.device = updates, save_dir, device
        self._profiler: Optional[torch.profiler.profile] = None
        self._seconds: list[float] = []
        self._first = 0  # the first update profiled

    def before(self, step: int) -> None:
        """Update ``step`` (from 1) is about to run."""
        if self.updates is not None and step == self.updates.start and self._profiler is None:
            gpu = [ProfilerActivity.CUDA] if self.device.type == "cuda" else []
            self._profiler, self._first = torch.profiler.profile(activities=[ProfilerActivity.CPU, *gpu]), step
            self._profiler.start()

    def after(self, step: int, seconds: float) -> None:
        """Update ``step`` took ``seconds`` (wall time, up to its loss on the host)."""
        if self._profiler is None:
            return
        self._seconds.append(seconds)
        if self.updates is not None and step >= self.updates[-1]:
            self.close()

    def close(self) -> None:
        """Stop profiling and write ``profile.txt`` and ``profile.json`` (nothing if no update was profiled)."""
        if self._profiler is None:
            return
        profiler, self._profiler = self._profiler, None
        profiler.stop()
        if not self._seconds:
            return
        events = profiler.key_averages()
        sort = "self_device_time_total" if self.device.type == "cuda" else "self_cpu_time_total"
        lines = [per_update(events, self._seconds, self.device, self._first), "",
                 events.table(sort_by=sort, row_limit=40)]
        with atomic_output(self.save_dir / "profile.txt") as f:
            f.write("\n".join(lines) + "\n")
        with tempfile.TemporaryDirectory() as folder, atomic_output(self.save_dir / "profile.json", "wb") as f:
            trace = Path(folder) / "trace.json"  # (torch writes the trace to a path; it appears whole or not at all)
            profiler.export_chrome_trace(str(trace))
            with open(trace, "rb") as written:
                shutil.copyfileobj(written, f)


def per_update(events: Sequence, seconds: Sequence[float], device: torch.device, first: int) -> str:
    """The first line of ``profile.txt``: which updates were profiled (from update ``first``, ``seconds`` each,
    wall time) on ``device``, and per update the wall time, the device's time in kernels (the device's own events,
    not the host operations that launched them, which carry the same time), kernel launches and host
    synchronisations, from ``events`` (the profiler's :meth:`key_averages`)."""
    n = len(seconds)
    device_us = sum(e.self_device_time_total for e in events
                    if e.device_type != DeviceType.CPU and not e.is_user_annotation)
    launches = sum(e.count for e in events if e.key.startswith(_LAUNCHES))
    syncs = sum(e.count for e in events if any(s in e.key for s in _SYNCS))
    return (f"updates {first}-{first + n - 1} profiled on {device}: per update {1000 * sum(seconds) / n:.2f} ms wall, "
            f"{device_us / 1000 / n:.2f} ms of device kernels, {launches / n:.0f} kernel launches, "
            f"{syncs / n:.1f} host synchronisations")
