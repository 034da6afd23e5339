"""A full disk, for every kind of output: one line "no space left on device while writing FILE", a non-zero exit
code, no half-written file under its name, and the earlier outputs (checkpoints) intact.

stdout is tested on /dev/full; files on a small tmpfs mounted in a private mount namespace (``unshare``), where
the platform allows it, else those tests are skipped with the reason.
"""
from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY_MODEL, run

NMTKIT = [sys.executable, "-m", "nmtkit"]


def nmtkit_line(*args) -> str:
    return " ".join(shlex.quote(str(a)) for a in [*NMTKIT, *args])


def tmpfs_unavailable(probe: Path) -> str:
    """Why a tmpfs cannot be mounted here ('' if it can)."""
    if not shutil.which("unshare"):
        return "no unshare command"
    probe.mkdir(exist_ok=True)
    r = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {probe}"],
                       capture_output=True, text=True)
    return "" if r.returncode == 0 else f"cannot mount a tmpfs in a user namespace: {r.stderr.strip()}"


@pytest.fixture
def small_disk(tmp_path):
    """``run(script)``: run a shell script with ``$DISK`` a 4 MB tmpfs that ``fill`` fills up to its last
    ``free`` bytes."""
    disk = tmp_path / "disk"
    reason = tmpfs_unavailable(disk)
    if reason:
        pytest.skip(reason)

    def run_script(script: str) -> subprocess.CompletedProcess:
        setup = (f"set -u; DISK={disk}; mount -t tmpfs -o size=4m tmpfs $DISK; "
                 "fill() { cat /dev/zero > $DISK/.fill 2>/dev/null; truncate -s -${1:-0} $DISK/.fill; }; ")
        return subprocess.run(["unshare", "-rm", "bash", "-c", setup + script], capture_output=True, text=True,
                              cwd=tmp_path)

    return run_script


def assert_one_line(r: subprocess.CompletedProcess, message: str) -> None:
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert r.returncode == 1, r.stderr
    assert errors == [f"error: {message}"] and r.stderr.endswith(errors[0] + "\n"), r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr


@pytest.fixture
def lines(text_dir):
    return text_dir / "test.en"


def test_stdout_on_a_full_disk(trained_ckpt, lines, text_dir):
    with open(lines, "rb") as stdin, open("/dev/full", "w") as full:
        r = subprocess.run([*NMTKIT, "translate", "-m", trained_ckpt, "--greedy"], stdin=stdin, stdout=full,
                           stderr=subprocess.PIPE, text=True)
    assert_one_line(r, "no space left on device while writing <stdout>")
    with open(lines, "rb") as stdin, open("/dev/full", "w") as full:
        r = subprocess.run([*NMTKIT, "score", "-r", text_dir / "test.de"], stdin=stdin, stdout=full,
                           stderr=subprocess.PIPE, text=True)
    assert_one_line(r, "no space left on device while writing <stdout>")


def test_translate_output_and_attention_files(small_disk, trained_ckpt, lines):
    r = small_disk(f"fill; {nmtkit_line('translate', '-m', trained_ckpt, '--greedy', '-i', lines)} -o $DISK/out.de; "
                   "code=$?; ls -A $DISK; exit $code")
    assert_one_line(r, f"no space left on device while writing {r.args[-1].split('DISK=')[1].split(';')[0]}/out.de")
    assert "out.de" not in r.stdout  # neither the file nor its temporary
    many = lines.parent / "many.en"  # 3,000 lines: more attention than the 400 kB left hold
    many.write_text(lines.read_text() * 100)
    r = small_disk(f"fill 409600; {nmtkit_line('translate', '-m', trained_ckpt, '--greedy', '-i', many)} "
                   "--attention-out $DISK/attn.h5 > /dev/null; code=$?; ls -A $DISK; exit $code")
    assert r.returncode == 1 and "no space left on device while writing" in r.stderr and "attn.h5" in r.stderr
    assert r.stderr.count("\n") == 1 and "attn.h5" not in r.stdout


def test_preprocess_leaves_no_corpus_folder(small_disk, text_dir):
    r = small_disk(f"fill 20000; {nmtkit_line('preprocess', '--train', text_dir / 'train', '--valid', text_dir / 'valid')}"
                   " --src en --tgt de --vocab word:100 -o $DISK/corpus; code=$?; ls -A $DISK; exit $code")
    assert r.returncode == 1 and "no space left on device while writing the corpus folder" in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("error:") and "Traceback" not in r.stderr
    assert r.stdout.split() == [".fill"]


def test_checkpoints_survive_a_full_disk(small_disk, corpus_dir, tmp_path):
    save = tmp_path / "run"
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 2, "--valid-every", 2,
         "--valid-max-sentences", 2])
    before = sorted(f"{hashlib.sha256(p.read_bytes()).hexdigest()} {p.name}" for p in save.glob("*.pt"))
    resume = nmtkit_line("train", "--save-dir", save, "--resume", "--max-steps", 4, "--valid-every", 2,
                         "--valid-max-sentences", 2).replace(shlex.quote(str(save)), "$DISK/run")
    r = small_disk(f"cp -r {save} $DISK/run && fill 65536 && {resume}; code=$?; "
                   "ls -A $DISK/run; cd $DISK/run && sha256sum *.pt; exit $code")
    assert r.returncode == 1, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: no space left on device while writing ")
    assert errors[0].endswith("/run/last.pt") and "Traceback" not in r.stderr
    listing, sums = r.stdout.split("\n", 4)[:4], r.stdout.strip().splitlines()[-2:]
    assert sorted(listing) == ["best.pt", "config.yaml", "last.pt", "train.jsonl"]  # no temporary file left
    assert sorted(line.replace("  ", " ") for line in sums) == before  # the earlier checkpoints, byte for byte


def test_demo_corpus_on_a_full_disk(small_disk):
    r = small_disk(f"fill; {nmtkit_line('demo-corpus', '$DISK/d', '--train', 2000)}; code=$?; ls -A $DISK; exit $code"
                   .replace("'$DISK/d'", "$DISK/d"))
    assert r.returncode == 1 and r.stderr.startswith("error: no space left on device while writing the demo corpus "
                                                     "folder ")
    assert r.stderr.count("\n") == 1 and r.stderr.endswith("/d\n") and r.stdout == ".fill\n"  # nothing else left
