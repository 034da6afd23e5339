"""Reading and writing text files line by line, with errors that name file and line."""
from __future__ import annotations

import codecs
import os
import stat
import sys
import tempfile
from contextlib import contextmanager
from itertools import zip_longest
from pathlib import Path
from typing import IO, Any, Iterator, Optional, Union, cast

from nmtkit.data.temporaries import prefix_for, remove_stale
from nmtkit.errors import NmtkitError, is_disk_full, writing
from nmtkit.progress import log, warn

PathLike = Union[str, os.PathLike]


def without_bom(raw: bytes) -> bytes:
    """A line without the UTF-8 byte-order mark that may open it: the one opening a file or a stream, or that of a
    file joined to another by ``cat`` (dropped as a Windows line ending's ``\\r`` is)."""
    return raw[len(codecs.BOM_UTF8):] if raw.startswith(codecs.BOM_UTF8) else raw


def decode_line(raw: bytes, name: str, lineno: int) -> str:
    """Decode line ``lineno`` (from 1) of UTF-8, without a byte-order mark opening it, raising an error naming
    ``name:lineno`` if it is invalid."""
    try:
        return without_bom(raw).decode("utf-8")
    except UnicodeDecodeError as e:
        raise NmtkitError(f"{name}:{lineno}: invalid UTF-8 (byte {e.start + 1} of the line)") from None


def strip_newline(raw: bytes) -> bytes:
    """Remove one trailing ``\\n`` (and a ``\\r`` before it)."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw


def check_readable(path: PathLike, allow_empty: bool = False, stream: bool = False) -> Path:
    """Return ``path`` as a Path if it is a readable, non-empty file, else raise NmtkitError. With ``stream``, for
    a file read once from start to end, a pipe or a device will do too (``-i <(command)``, ``/dev/stdin``)."""
    p = Path(path)
    if not p.exists():
        raise NmtkitError(f"{p}: no such file")
    if stream and is_stream(p):
        return p
    if not p.is_file():
        raise NmtkitError(f"{p}: not a regular file")
    if not allow_empty and p.stat().st_size == 0:
        raise NmtkitError(f"{p}: file is empty")
    compressed = compression(p)
    if compressed:
        raise NmtkitError(f"{p}: {compressed}-compressed; nmtkit reads files uncompressed: decompress it first "
                          f"({COMPRESSORS[compressed]} {p})")
    return p


#: what decompresses each kind of file that :func:`compression` recognises, keeping the compressed one
COMPRESSORS = {"gzip": "gunzip -k", "bzip2": "bunzip2 -k", "xz": "unxz -k", "zstd": "unzstd"}


def compression(path: Path) -> Optional[str]:
    """The compression of a file (``gzip``, ``bzip2``, ``xz`` or ``zstd``, by its first bytes), None for another
    file. No UTF-8 text opens as these do (their first bytes are not UTF-8, or bzip2's whole header)."""
    with open(path, "rb") as f:
        head = f.read(10)
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] == b"1AY&SY":
        return "bzip2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd"
    return None


def is_stream(path: PathLike) -> bool:
    """Whether ``path`` is a pipe or a character device (readable once, of a length unknown before)."""
    p = Path(path)
    return p.is_fifo() or p.is_char_device()


def count_lines(path: PathLike) -> int:
    """Number of lines in a file (a last line without newline counts)."""
    return _line_counts(path)[0]


def _line_counts(path: PathLike) -> tuple[int, int]:
    """Lines in a file (a last line without newline counts), and carriage returns not followed by a newline (old Mac
    line endings, which end no line here; one split between two blocks read is counted too)."""
    n = lone = 0
    last = b"\n"
    with open(path, "rb") as f:
        while True:
            block = f.read(1 << 20)
            if not block:
                break
            n += block.count(b"\n")
            lone += block.count(b"\r") - block.count(b"\r\n")
            last = block[-1:]
    return n + (last != b"\n"), lone


def iter_lines(path: PathLike) -> Iterator[str]:
    """Yield the decoded lines of a UTF-8 file without newlines; invalid UTF-8 raises with the line."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            yield decode_line(strip_newline(raw), str(path), lineno)


def read_lines(path: PathLike) -> list[str]:
    """All lines of a UTF-8 file (see :func:`iter_lines`)."""
    return list(iter_lines(path))


def reference_streams(lines: list[str], separator: str = "\t") -> list[list[Optional[str]]]:
    """Reference streams (each as long as ``lines``) from lines that each hold several references split by
    ``separator`` (an image's captions); None where a line has fewer references than the most."""
    rows = [line.split(separator) for line in lines]
    width = max((len(r) for r in rows), default=1)
    return [[r[k] if k < len(r) else None for r in rows] for k in range(width)]


def lone_carriage_returns(name: object, lone: int, lines: int) -> str:
    """The warning of a file of old Mac line endings: ``lone`` carriage returns without a newline after them, in
    ``lines`` lines (more than one a line: not a stray one in some text)."""
    return (f"{name}: {lone:,} carriage returns (\\r) without a newline after them, in {lines:,} line(s): lines end at "
            "a newline (\\n) alone here; a file of old Mac line endings reads as one line (convert it: tr '\\r' "
            "'\\n')")


def check_parallel(*paths: PathLike) -> int:
    """Check that files exist, are non-empty and have the same number of lines; return it. A file whose carriage
    returns end lines of their own (old Mac line endings: lines are ended by a newline here) is warned of."""
    files = [check_readable(p) for p in paths]
    counted = [_line_counts(f) for f in files]
    counts = [n for n, _ in counted]
    for f, (n, lone) in zip(files, counted):
        if lone > n:  # (more than one a line: not a stray one in some text)
            warn(lone_carriage_returns(f, lone, n))
    for f, n in zip(files[1:], counts[1:]):
        if n != counts[0]:
            raise NmtkitError(f"{files[0]} has {counts[0]} lines but {f} has {n}: parallel files must have the "
                              "same number of lines")
    return counts[0]


def parallel_lines(*paths: PathLike) -> Iterator[tuple[str, ...]]:
    """The lines of parallel files side by side (see :func:`iter_lines`), each file read once from start to end, so
    that a pipe will do. Files of different numbers of lines are a one-line error: before the first line where all
    are regular files (:func:`check_parallel`), else once the shortest ends."""
    if not any(is_stream(p) for p in paths):
        check_parallel(*paths)  # (each file checked readable too)
    else:
        for p in paths:
            check_readable(p, stream=True)
    ended = object()
    for n, lines in enumerate(zip_longest(*map(iter_lines, paths), fillvalue=ended)):
        if ended in lines:
            short, long = (paths[lines.index(ended)], paths[next(k for k, x in enumerate(lines) if x is not ended)])
            raise NmtkitError(f"{short} has {n} lines but {long} has more: parallel files must have the same number "
                              "of lines")
        yield cast(tuple[str, ...], lines)


def check_no_file_above(path: PathLike, option: str = "") -> None:
    """Refuse, in one line naming ``option`` (if any) and ``path``, a path that a file stands in the way of: the path
    or a folder above it is a file (so no folder can be made there)."""
    path = Path(path)
    for above in path.parents:
        if above.exists() and not above.is_dir():
            raise NmtkitError(f"{option + ' ' if option else ''}{path}: {above} is a file, not a folder", exit_code=2)


def check_writable(target: PathLike, option: str, inside: bool = False) -> None:
    """Refuse, in one line naming ``option`` (exit 2), an output ``target`` whose folder (``inside``: the folder
    ``target`` itself, that files are written into), or the nearest one above it that exists, no file can be made
    in: tried, as permissions do not tell (root, read-only or special file systems)."""
    target = Path(target)
    if not inside and str(target) in STANDARD:  # (the process' own standard output or error)
        return
    if not inside and is_stream(target):  # (a pipe or a device: written into as it is)
        if not os.access(target, os.W_OK):
            raise NmtkitError(f"{option} {target}: cannot write (permission denied)", exit_code=2)
        return
    check_no_file_above(target, option)
    if inside and target.exists() and not target.is_dir():
        raise NmtkitError(f"{option} {target}: a file, not a folder", exit_code=2)
    first = target if inside else target.parent
    folder = next(p for p in (first, *first.parents) if p.exists())
    try:
        fd, probe = tempfile.mkstemp(prefix=".nmtkit-probe.", dir=folder)
    except OSError as e:
        raise NmtkitError(f"{option} {target}: cannot write in {folder} ({e.strerror or e})", exit_code=2) from None
    os.close(fd)
    os.unlink(probe)


def temp_file_beside(path: Path) -> str:
    """Create an empty temporary file next to ``path`` (same folder, so a rename is atomic), named after this
    process (:mod:`nmtkit.data.temporaries`), first removing those that a killed process left for ``path``.

    Its permissions follow the umask like any new file (mkstemp's default is owner-only).
    """
    check_no_file_above(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    stale = remove_stale(path)
    if stale:
        log(f"removed {stale} temporary file(s) that a killed run left beside {path}")
    fd, tmp = tempfile.mkstemp(prefix=prefix_for(path), suffix=".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return tmp


def replacement_for(path: Path) -> tuple[str, Path]:
    """An empty temporary file to be renamed over ``path`` once written, and the file to rename it to: a symbolic
    link's target (the link is written through and kept), with the permissions of the file it replaces."""
    target = Path(os.path.realpath(path))
    tmp = temp_file_beside(target)
    if target.exists():
        os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
    return tmp, target


#: the names of the process' own standard output and error (its descriptor 1 or 2), written to as such (``-``: an
#: output option's name for the standard output)
STANDARD = {**dict.fromkeys(("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"), 1),
            **dict.fromkeys(("/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"), 2)}


@contextmanager
def atomic_output(path: PathLike, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path`` and rename it to ``path`` only on success.

    A failure or a kill never leaves a partial file under the final name; a full disk, or a folder that cannot be
    written, is one line naming ``path``. A symbolic link is written through (its target replaced, the link kept),
    and a file replaced keeps its permissions. A pipe or a character device (``mkfifo``, a shell's ``>(...)``) is
    written into as it is, never replaced by a file, and ``/dev/stdout`` (:data:`STANDARD`) is the process' own.
    """
    path = Path(path)
    kwargs: dict[str, Any] = {"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}
    if str(path) in STANDARD:  # (the process' own: a file it was redirected to is appended to, not replaced)
        stream = sys.stdout if STANDARD[str(path)] == 1 else sys.stderr
        with writing(path):
            yield stream.buffer if "b" in mode else stream
            stream.flush()
        return
    if is_stream(path):
        with writing(path), _naming(path), open(path, mode, **kwargs) as f:
            yield f
        return
    with writing(path), _naming(path):
        tmp, target = replacement_for(path)
    try:
        with writing(path):
            with open(tmp, mode, **kwargs) as f:
                yield f
            with _naming(path):
                os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Within the block, an error of the file system (other than a full disk) is one line naming ``path``."""
    try:
        yield
    except OSError as e:
        if is_disk_full(e):
            raise
        raise NmtkitError(f"{path}: cannot write ({e.strerror or e})") from None


@contextmanager
def _stdout() -> Iterator[IO]:
    with writing("<stdout>"):
        yield sys.stdout
        sys.stdout.flush()


def open_output(path: Optional[PathLike]):
    """Context manager yielding a text stream: stdout for None or '-', else an atomic file."""
    if path is None or str(path) == "-":
        return _stdout()
    return atomic_output(path)
