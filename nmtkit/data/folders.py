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
from nmtkit.data.manifest import MANIFEST, read_manifest
from nmtkit.data.temporaries import prefix_for, remove_stale
from nmtkit.data.text import PathLike, check_writable
from nmtkit.errors import DiskFull, NmtkitError, writing
from nmtkit.progress import log

MARKER = ".nmtkit-folder.json"
CORPUS = "corpus folder"


def _listing(folder: Path) -> list[str]:
    """Every file under ``folder``, as paths relative to it (folders end with '/'; a link is a file), sorted."""
    found = []
    for root, dirs, files in os.walk(folder):
        rel = Path(root).relative_to(folder)
        found += [(rel / d).as_posix() + ("" if os.path.islink(Path(root) / d) else "/") for d in dirs]
        found += [(rel / f).as_posix() for f in files]
    return sorted(found)


def _made(folder: Path) -> Optional[tuple[str, set[str]]]:
    """What ``folder`` is and the files nmtkit made in it (by its marker, or the manifest of an older corpus folder);
    None if nothing says nmtkit made it."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        return str(marker["what"]), {*marker["files"], MARKER}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:  # a corpus folder from before markers: an nmtkit manifest (its schema checked) lists every other file
        manifest = read_manifest(folder)
    except NmtkitError:
        return None
    return (CORPUS, {*manifest["files"], MANIFEST}) if "files" in manifest else None


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both resolved: links, ``..`` and relative paths)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def check_output_folder(path: PathLike, what: str, replace: bool, option: str, replace_option: Optional[str],
                        inputs: Iterable[PathLike] = ()) -> None:
    """Refuse, in one line naming ``option``, an output folder ``path`` that a command writing a ``what`` may not
    use: under a file, the current folder or one above it, holding one of ``inputs``, or, unless empty, one that
    ``replace`` is not given for (``replace_option``; None: the command always replaces its own), or that holds
    anything nmtkit did not make there as a ``what``."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NmtkitError(f"{option} {path}: a file, not a folder", exit_code=2)
    check_writable(path, option)  # (where the folder is made, beside it; a file in the way named as such)
    if _inside(Path.cwd(), path):
        raise NmtkitError(f"{option} {path}: the current folder or one above it; write the {what} to a new folder",
                          exit_code=2)
    for given in inputs:
        if _inside(Path(given), path):
            raise NmtkitError(f"{option} {path}: holds the input {given}; write the {what} to another folder",
                              exit_code=2)
    if not path.exists() or not any(path.iterdir()):
        return
    made = _made(path)
    by = replace_option or "this command"
    if not replace:
        held = f"a {what}; use {by} to replace it" if made and made[0] == what else \
            f"files; choose another folder ({by} replaces only a {what} nmtkit made)"
        raise NmtkitError(f"{option} {path}: already holds {held}", exit_code=2)
    if made is None or made[0] != what:
        was = f"a {made[0]}" if made else "not made by nmtkit"
        raise NmtkitError(f"{option} {path}: {was}, so {by} leaves it alone (it replaces only a {what} nmtkit "
                          "made); remove it yourself or choose another folder", exit_code=2)
    folders = {f"{above.as_posix()}/" for name in made[1] for above in Path(name).parents if above != Path(".")}
    foreign = [name for name in _listing(path) if name not in (folders if name.endswith("/") else made[1])]
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise NmtkitError(f"{option} {path}: holds {foreign[0]}{more}, which nmtkit did not make there, so {by} "
                          f"leaves the folder alone; move {'it' if len(foreign) == 1 else 'them'} or choose another "
                          "folder", exit_code=2)


def _write_marker(folder: Path, what: str) -> None:
    """The marker of a complete folder: what it is and every file it holds."""
    files = [name for name in _listing(folder) if not name.endswith("/")]
    record = {"what": what, "nmtkit_version": __version__, "files": files}
    (folder / MARKER).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


@contextmanager
def atomic_folder(path: PathLike, what: str, replace: bool = False, option: str = "-o",
                  replace_option: Optional[str] = "--overwrite", inputs: Iterable[PathLike] = ()) -> Iterator[Path]:
    """A new temporary folder beside ``path`` to write a ``what`` into, marked as made by nmtkit and renamed to
    ``path`` only on success, with a new folder's permissions. An existing ``path`` is replaced only as
    :func:`check_output_folder` allows (checked before and again at the end); a link to a folder is followed, so
    the folder it names is replaced. A failure or a kill never leaves a partial folder under the final name; a full
    disk is one line naming "the ``what`` ``path``"."""
    given, inputs = Path(path), list(inputs)
    check_output_folder(given, what, replace, option, replace_option, inputs)
    path = Path(os.path.realpath(given))
    path.parent.mkdir(parents=True, exist_ok=True)
    stale = remove_stale(path)
    if stale:
        log(f"removed {stale} temporary folder(s) that a killed run left beside {given}")
    tmp = Path(tempfile.mkdtemp(prefix=prefix_for(path), suffix=".tmp", dir=path.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp's folder is private
    try:
        try:
            with writing(given):
                yield tmp
                _write_marker(tmp, what)
        except DiskFull:  # named after the folder, not the temporary one holding the file that did not fit
            raise DiskFull(f"the {what} {given}") from None
        check_output_folder(given, what, replace, option, replace_option, inputs)
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=prefix_for(path), suffix=".old", dir=path.parent))
            os.replace(path, old / path.name)
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
