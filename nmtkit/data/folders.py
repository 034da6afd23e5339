"""The folders nmtkit writes whole (corpora, exported models): assembled under a temporary name and renamed when
complete, marked as made by nmtkit, and replaced (``--overwrite``, ``--force``) only when everything they hold
is what nmtkit made there. A folder's files are the user's: one holding anything else, or one of the command's
inputs, is refused in one line and left as it is (DESIGN.md, "Files are the user's").

The marker, ``.nmtkit-folder.json`` inside the folder, names what the folder is and every file it holds.
Corpus folders written before markers are recognised by their manifest's list of files.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Optional

from nmtkit import __version__
from nmtkit.data.text import PathLike
from nmtkit.errors import DiskFull, NmtkitError, writing

MARKER = ".nmtkit-folder.json"
CORPUS = "corpus folder"


def _listing(folder: Path) -> list[str]:
    """Every file under ``folder``, as paths relative to it (folders end with '/'), sorted."""
    found = []
    for root, dirs, files in os.walk(folder):
        rel = Path(root).relative_to(folder)
        found += [f"{(rel / d).as_posix()}/" for d in dirs] + [(rel / f).as_posix() for f in files]
    return sorted(found)


def _made(folder: Path) -> Optional[tuple[str, set[str]]]:
    """What ``folder`` is and the files nmtkit made in it (by its marker, or the manifest of an older corpus folder);
    None if nothing says nmtkit made it."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        return str(marker["what"]), {*marker["files"], MARKER}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:  # a corpus folder from before markers: its manifest lists every other file
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        return CORPUS, {*manifest["files"], "manifest.json"}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def check_output_folder(path: PathLike, what: str, replace: bool, option: str, replace_option: str,
                        inputs: Iterable[PathLike] = ()) -> None:
    """Refuse, in one line naming ``option``, an output folder ``path`` that a command writing a ``what`` may not
    use: under a file, holding one of ``inputs``, or, unless empty, one that ``replace`` (``replace_option``) is not
    given for, or that holds anything nmtkit did not make there as a ``what``."""
    path = Path(path)
    for parent in [path, *path.parents]:
        if parent.exists() and not parent.is_dir():
            raise NmtkitError(f"{option} {path}: {parent} is a file, not a folder", exit_code=2)
    for given in inputs:
        if _inside(Path(given), path):
            raise NmtkitError(f"{option} {path}: holds the input {given}; write the {what} to another folder",
                              exit_code=2)
    if not path.exists() or not any(path.iterdir()):
        return
    made = _made(path)
    if not replace:
        held = f"a {what}; use {replace_option} to replace it" if made and made[0] == what else \
            f"files; choose another folder ({replace_option} replaces only a {what} nmtkit made)"
        raise NmtkitError(f"{option} {path}: already holds {held}", exit_code=2)
    if made is None or made[0] != what:
        was = f"a {made[0]}" if made else "not made by nmtkit"
        raise NmtkitError(f"{option} {path}: {was}, so {replace_option} leaves it alone (it replaces only a {what} "
                          "nmtkit made); remove it yourself or choose another folder", exit_code=2)
    foreign = [name for name in _listing(path) if name not in made[1] and not name.endswith("/")]
    if foreign:
        raise NmtkitError(f"{option} {path}: holds {foreign[0]}{f' and {len(foreign) - 1} more' if len(foreign) > 1 else ''}"
                          f", which nmtkit did not make there, so {replace_option} leaves the folder alone; move "
                          f"{'it' if len(foreign) == 1 else 'them'} or choose another folder", exit_code=2)


def _write_marker(folder: Path, what: str) -> None:
    files = [name for name in _listing(folder) if not name.endswith("/")]
    record = {"what": what, "nmtkit_version": __version__, "files": files}
    (folder / MARKER).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


@contextmanager
def atomic_folder(path: PathLike, what: str, replace: bool = False, option: str = "-o",
                  replace_option: str = "--overwrite", inputs: Iterable[PathLike] = ()) -> Iterator[Path]:
    """A new temporary folder beside ``path`` to write a ``what`` into, marked as made by nmtkit and renamed to
    ``path`` only on success, with a new folder's permissions. An existing ``path`` is replaced only as
    :func:`check_output_folder` allows (checked before and again at the end). A failure or a kill never leaves a
    partial folder under the final name; a full disk is one line naming "the ``what`` ``path``"."""
    path, inputs = Path(path), list(inputs)
    check_output_folder(path, what, replace, option, replace_option, inputs)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's folder is private
    try:
        try:
            with writing(path):
                yield tmp
                _write_marker(tmp, what)
        except DiskFull:  # named after the folder, not the temporary one holding the file that did not fit
            raise DiskFull(f"the {what} {path}") from None
        check_output_folder(path, what, replace, option, replace_option, inputs)
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old / path.name)
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
