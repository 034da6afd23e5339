"""The exception types that the CLI turns into a one-line message and an exit code, and the recognition of a
full disk among the errors of writing files."""
from __future__ import annotations

import errno
from contextlib import contextmanager
from typing import Iterator


class NmtkitError(Exception):
    """A user-facing error: bad input, bad option, missing file.

    The message names the file, line or option at fault; ``exit_code`` is what the
    command exits with (2 for usage errors, 1 for everything else).
    """

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that clean-ups run (temporary files removed) before exit 143."""


#: errno values of a full disk: no space, or the user's quota used up
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def is_disk_full(e: BaseException) -> bool:
    """Whether an exception reports a full disk: an OSError's errno, or the text HDF5 and torch put in theirs."""
    if isinstance(e, OSError) and e.errno in DISK_FULL:
        return True
    text = str(e)
    return any(s in text for s in ("No space left on device", "Disk quota exceeded", "errno = 28"))


class DiskFull(NmtkitError):
    """No space left on the device while writing ``name``."""

    def __init__(self, name: object):
        super().__init__(f"no space left on device while writing {name}")


def is_too_large(e: BaseException) -> bool:
    """Whether an exception reports a file grown past the largest size allowed (``ulimit -f``, the file system's)."""
    return (isinstance(e, OSError) and e.errno == errno.EFBIG) or "File too large" in str(e)


@contextmanager
def writing(name: object) -> Iterator[None]:
    """Within the block, a full disk becomes one line: "no space left on device while writing NAME", and a file
    grown past the size allowed another."""
    try:
        yield
    except (OSError, RuntimeError) as e:
        if is_disk_full(e):
            raise DiskFull(name) from None
        if is_too_large(e):
            raise NmtkitError(f"file too large while writing {name}: past the size the file system or the process' "
                              "limit allows (ulimit -f)") from None
        raise
