"""Temporary files and folders, written beside an output and renamed over it once whole, are named after the
process writing them, ``.NAME.PID-HOST.XXXXXXXX.tmp``: the next process to write the same output removes those
that a killed one left, and leaves alone those of a live process or of another machine sharing the folder."""
from __future__ import annotations

import glob
import os
import shutil
import socket
from pathlib import Path


def host() -> str:
    """This machine's name, as a temporary's name holds it (without dots)."""
    return socket.gethostname().replace(".", "_")


def writer() -> str:
    """What names the process writing a temporary: its pid on this machine (``PID-HOST``)."""
    return f"{os.getpid()}-{host()}"


def prefix_for(path: Path) -> str:
    """The start of the name of a temporary this process writes for ``path`` (mkstemp's or mkdtemp's ``prefix``)."""
    return f".{path.name}.{writer()}."


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # (another user's)
        return True
    return True


def remove_every(path: Path) -> int:
    """Remove every temporary file beside ``path`` (a name, or a glob: ``step-*.pt``) whoever wrote it, for a writer
    that holds the folder's lock (``train --resume``: all there are a killed run's, of this machine or another, and
    of names made before they held their writer's); the count."""
    stale = list(path.parent.glob(f".{path.name}.*.tmp"))
    for tmp in stale:
        tmp.unlink(missing_ok=True)
    return len(stale)


def remove_stale(path: Path) -> int:
    """Remove the temporaries beside ``path`` that a process of this machine no longer running (killed) left; the
    count. Those of a live process, of another machine or container, names of another shape and the ``.old`` copy
    of a folder being replaced (the only one left where a kill came between its two renames) stay."""
    stale, here = 0, host()
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.*.tmp"):
        owner, letters, _ = leftover.name[len(path.name) + 2:].split(".", 2)  # (mkstemp's or mkdtemp's 8 letters)
        pid, _, where = owner.partition("-")
        ours = pid.isdigit() and where == here and len(letters) == 8 and \
            leftover.name.count(".") == path.name.count(".") + 4
        if ours and not running(int(pid)):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
            stale += 1
    return stale
