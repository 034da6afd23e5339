"""The lock on a run folder: one training process at a time writes checkpoints and train.jsonl into ``--save-dir``.

``save_dir/.lock`` holds the pid of the process training there, under an exclusive ``flock``: the operating system
releases the lock when the process ends, however it ends (a kill -9 included). A second process (a second run, or a
``--resume`` beside a live run) is refused in one line naming the holder's pid; a lock file left by a process that
died (its pid still written, but no longer locked) is taken over with a note.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Optional

from nmtkit.data.text import PathLike, check_no_file_above
from nmtkit.errors import NmtkitError
from nmtkit.progress import log, warn

LOCK = ".lock"


class RunLock:
    """``with RunLock(save_dir):`` holds the run folder's lock for the block (creating the folder, which it removes
    again if it is left empty)."""

    def __init__(self, folder: PathLike):
        self.path = Path(folder) / LOCK
        self.fd: Optional[int] = None
        self.created = False

    def acquire(self) -> None:
        """Take the lock, or raise NmtkitError naming the process that holds it. On a file system that cannot lock
        (some network and cluster file systems), warn in one line and train unlocked."""
        folder = self.path.parent
        if folder.exists() and not folder.is_dir():
            raise NmtkitError(f"--save-dir {folder}: a file, not a folder", exit_code=2)
        check_no_file_above(folder, "--save-dir")
        while True:
            self.created = self.created or not folder.exists()
            folder.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:  # the folder went with the holder that just let go: make it again
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 64).decode(errors="replace").strip()
                os.close(fd)
                raise NmtkitError(f"--save-dir {folder}: {f'process {holder}' if holder else 'another process'} is "
                                  f"training in this folder (it holds {self.path}); wait for it to end or choose "
                                  "another folder") from None
            except OSError as e:
                os.close(fd)
                warn(f"--save-dir {folder}: this file system cannot lock {self.path} ({e.strerror}); training "
                     "unlocked: start no second run in this folder")
                return
            try:  # the file may have been removed by the holder as it let go: lock the one under the name
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        stale = os.read(fd, 64).decode(errors="replace").strip()
        if stale and not stale.isdigit():  # not a lock this class wrote (a pid): someone's file, left alone
            os.close(fd)
            raise NmtkitError(f"--save-dir {folder}: holds a file {LOCK} that is not a run's lock; remove it or "
                              "choose another folder", exit_code=2)
        if stale:
            log(f"took over {self.path} from process {stale}, which ended without releasing it")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        """Remove the lock file (and the folder, if made here and left empty) and let go of the lock."""
        if self.fd is None:
            return
        self.path.unlink(missing_ok=True)
        os.close(self.fd)
        self.fd = None
        if self.created:
            try:
                self.path.parent.rmdir()  # only if empty: a refused run leaves no folder behind
            except OSError:
                pass

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
