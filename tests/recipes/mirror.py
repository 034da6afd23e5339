"""What the recipe tests share: running a recipe as a user would, and a fake mirror serving its downloads."""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import torch

from nmtkit.data.vgg import VGG16Features


def run_recipe(script: Path, work: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``bash SCRIPT ARGS... WORK`` with this Python's ``nmtkit`` first on the PATH and ``env`` added."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **env}
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
