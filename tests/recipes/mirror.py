"""What the recipe tests share: running a recipe as a user would, and a fake mirror serving its downloads."""
import atexit
import hashlib
import io
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import torch

from nmtkit.data.vgg import VGG16Features
from tests.nmtkit_server import NmtkitServer

_server: list[NmtkitServer] = []  # the one server of this test process, started by the first recipe run


def nmtkit_bin() -> Path:
    """The folder of an ``nmtkit`` served by :class:`tests.nmtkit_server.NmtkitServer` (torch imported once for
    every recipe command of the session, not once per command); stopped when the tests end."""
    if not _server:
        folder = Path(tempfile.mkdtemp(prefix="nmtkit-server-"))
        _server.append(NmtkitServer(folder, env={**os.environ, "OMP_NUM_THREADS": "1"}))
        atexit.register(shutil.rmtree, folder, True)
        atexit.register(_server[0].close)
    return _server[0].bin


def run_recipe(script: Path, work: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``bash SCRIPT ARGS... WORK`` with this checkout's ``nmtkit`` (served) and this Python first on the PATH, and
    ``env`` added."""
    path = os.pathsep.join([str(nmtkit_bin()), str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {**os.environ, "PATH": path, **env}
    return subprocess.run(["bash", str(script), *args, str(work)], env=env, capture_output=True, text=True)


def downloader(folder: Path, served: Path, junk: str = "") -> Path:
    """A ``DOWNLOADER DEST URL`` script in ``folder`` that copies the file of ``served`` named as the URL ends and
    logs the URL to ``served/fetched``; URLs ending in ``junk`` (if given) get a file of junk instead."""
    serve = f'echo "$2" >> "{served}/fetched"; cp "{served}/$(basename "$2")" "$1"'
    body = f'case "$2" in *{junk}) echo junk > "$1";; *) {serve};; esac' if junk else serve
    script = folder / "get.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def vgg16_weights(folder: Path) -> str:
    """Seeded VGG16 weights saved in ``folder`` as torchvision names them (the first 8 hex digits of their SHA-256);
    the file's name."""
    torch.manual_seed(0)
    torch.save(VGG16Features().state_dict(), folder / "vgg16.pth")
    digest = hashlib.sha256((folder / "vgg16.pth").read_bytes()).hexdigest()[:8]
    (folder / "vgg16.pth").rename(folder / f"vgg16-{digest}.pth")
    return f"vgg16-{digest}.pth"


def lines(texts: list) -> str:
    """``texts`` as the lines of a text file."""
    return "".join(t + "\n" for t in texts)


def tgz(path: Path, files: dict) -> Path:
    """A gzipped tar archive at ``path`` holding ``files`` (member name: text or bytes), as the WMT archives are."""
    with tarfile.open(path, "w:gz") as tar:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def sgm(lines: list, kind: str = "srcset") -> str:
    """``lines`` as a WMT test set's SGML file (``kind`` srcset or refset): one document, a <seg> a line."""
    segs = "".join(f'<seg id="{i}">{line}</seg>\n' for i, line in enumerate(lines, 1))
    return (f'<{kind} setid="newstest" srclang="any">\n<doc sysid="ref" docid="1" genre="news" origlang="en">\n'
            f"<p>\n{segs}</p>\n</doc>\n</{kind}>\n")


# a made-up language pair: English words and their German and French words, translated word by word
WORDS = {"the": ("die", "la"), "house": ("Haus", "maison"), "is": ("ist", "est"), "small": ("klein", "petite"),
         "a": ("ein", "une"), "cat": ("Katze", "chat"), "sees": ("sieht", "voit"), "green": ("grün", "verte"),
         "dog": ("Hund", "chien"), "big": ("groß", "grande"), "and": ("und", "et"), "red": ("rot", "rouge")}


def parallel(n: int, lang: str, seed: int = 0) -> tuple:
    """``n`` made-up English sentences and their word-by-word translations into ``lang`` (de or fr), raw text: a
    comma and the full stop stick to their words, as the WMT text has them before tokenisation."""
    rng = random.Random(seed)
    side = {"de": 0, "fr": 1}[lang]
    en, xx = [], []
    for _ in range(n):
        words = rng.choices(sorted(WORDS), k=rng.randint(3, 9))
        comma = rng.randrange(1, len(words))
        for out, words_of in ((en, words), (xx, [WORDS[w][side] for w in words])):
            out.append(" ".join(w + ("," if i == comma else "") for i, w in enumerate(words_of, 1)) + ".")
    return en, xx


def url_downloader(folder: Path, served: Path) -> Path:
    """A ``DOWNLOADER DEST URL`` script in ``folder`` that copies served/HOST/PATH for http(s)://HOST/PATH (for
    archives of one name at several addresses, as WMT's test.tgz) and logs the URL to ``served/fetched``."""
    script = folder / "get.sh"
    script.write_text(f'#!/bin/sh\necho "$2" >> "{served}/fetched"\ncp "{served}/${{2#*://}}" "$1"\n')
    script.chmod(0o755)
    return script
