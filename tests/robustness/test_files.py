"""Files are the user's: a command deletes or replaces only a folder it made (its marker says so, or a corpus'
manifest), never one holding anything else or one of its inputs; a run folder is locked while a process trains
in it, and a second process is refused in one line naming the holder."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from nmtkit.data.folders import MARKER
from tests.conftest import TINY_MODEL, run

TINY_TRANSFORMER = ["--arch", "transformer", "--d-model", 16, "--ffn-size", 16, "--heads", 2, "--enc-layers", 1,
                    "--dec-layers", 1, "--valid-max-sentences", 2]


def listing(folder):
    return sorted((p.relative_to(folder).as_posix(), p.read_bytes() if p.is_file() else None)
                  for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def transformer_run(corpus_dir, tmp_path_factory):
    """A run folder holding a one-update transformer (best.pt, last.pt, config.yaml, train.jsonl)."""
    save = tmp_path_factory.mktemp("transformer") / "run"
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_TRANSFORMER, "--max-steps", 1, "--valid-every", 1])
    return save


def test_export_force_replaces_only_an_earlier_export(transformer_run, tmp_path):
    pytest.importorskip("ctranslate2", reason="the optional extra nmtkit[ctranslate2] ('make test' installs it)")
    before = listing(transformer_run)
    r = run(["export", "-m", transformer_run / "best.pt", "-o", transformer_run, "--force"], ok=False)
    assert r.exit_code == 2 and f"-o {transformer_run}: holds the input {transformer_run / 'best.pt'}" in r.stderr
    assert listing(transformer_run) == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    r = run(["export", "-m", transformer_run / "best.pt", "-o", other, "--force"], ok=False)
    assert "not made by nmtkit, so --force leaves it alone" in r.stderr and (other / "notes.txt").exists()
    out = tmp_path / "ct2"
    run(["export", "-m", transformer_run / "best.pt", "-o", out])
    assert (out / MARKER).is_file()
    run(["export", "-m", transformer_run / "best.pt", "-o", out, "--force", "--quantization", "int8"])
    (out / "mine.txt").write_text("mine\n")
    r = run(["export", "-m", transformer_run / "best.pt", "-o", out, "--force"], ok=False)
    assert "holds mine.txt, which nmtkit did not make there" in r.stderr and (out / "mine.txt").exists()
    r = run(["export", "-m", transformer_run / "best.pt", "-o", out / "mine.txt" / "ct2"], ok=False)
    assert r.stderr.strip() == f"error: -o {out / 'mine.txt' / 'ct2'}: {out / 'mine.txt'} is a file, not a folder"


def test_export_force_leaves_a_corpus_folder_alone(transformer_run, corpus_dir):
    pytest.importorskip("ctranslate2", reason="the optional extra nmtkit[ctranslate2] ('make test' installs it)")
    before = listing(corpus_dir)
    r = run(["export", "-m", transformer_run / "best.pt", "-o", corpus_dir, "--force"], ok=False)
    assert "a corpus folder, so --force leaves it alone" in r.stderr and listing(corpus_dir) == before


def test_preprocess_overwrite_never_deletes_its_inputs_or_other_files(text_dir, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for name in ("train.en", "train.de", "valid.en", "valid.de"):
        (work / name).write_bytes((text_dir / name).read_bytes())
    args = ["preprocess", "--train", work / "train", "--valid", work / "valid", "--src", "en", "--tgt", "de",
            "--vocab", "word:100"]
    before = listing(work)
    r = run([*args, "-o", work, "--overwrite"], ok=False)
    assert r.exit_code == 2 and "not made by nmtkit, so --overwrite leaves it alone" in r.stderr
    assert listing(work) == before
    r = run([*args, "-o", tmp_path, "--overwrite"], ok=False)  # a folder above the inputs
    assert "not made by nmtkit" in r.stderr and listing(work) == before
    corpus = tmp_path / "corpus"
    run([*args, "-o", corpus])
    run([*args, "-o", corpus, "--overwrite"])  # an earlier corpus is replaced
    r = run(["preprocess", "--train", work / "train", "--valid", corpus / "valid", "--src", "en", "--tgt", "de",
             "--vocab", "word:100", "-o", corpus, "--overwrite"], ok=False)
    assert f"-o {corpus}: holds the input {corpus / 'valid.en'}" in r.stderr
    (corpus / "experiments" / "run1").mkdir(parents=True)  # (empty folders of the user's were removed with it)
    r = run([*args, "-o", corpus, "--overwrite"], ok=False)
    assert "holds experiments/ and 1 more, which nmtkit did not make there" in r.stderr
    assert (corpus / "experiments" / "run1").is_dir()
    (corpus / "experiments" / "run1").rmdir()
    (corpus / "experiments").rmdir()
    (corpus / "notes.txt").write_text("mine\n")
    r = run([*args, "-o", corpus, "--overwrite"], ok=False)
    assert "holds notes.txt, which nmtkit did not make there" in r.stderr and (corpus / "notes.txt").exists()


def test_preprocess_overwrite_replaces_a_corpus_made_before_markers(text_dir, tmp_path):
    args = ["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
            "--vocab", "word:100", "-o", tmp_path / "c"]
    run(args)
    (tmp_path / "c" / MARKER).unlink()  # as nmtkit 0.1 wrote it: its manifest lists its files
    run([*args, "--overwrite"])
    assert (tmp_path / "c" / MARKER).is_file()


def holder(folder):
    """A process holding ``folder``'s run lock until killed."""
    code = ("import sys, time\nfrom nmtkit.train.run_lock import RunLock\n"
            f"RunLock({str(folder)!r}).acquire()\nprint('locked', flush=True)\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_training_in_a_locked_run_folder_is_refused_naming_the_holder(corpus_dir, trained_ckpt, tmp_path):
    save = tmp_path / "run"
    proc = holder(save)
    try:
        args = ["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 2, "--valid-every", 2,
                "--valid-max-sentences", 2]
        r = run(args, ok=False)
        assert r.stderr.strip() == (f"error: --save-dir {save}: process {proc.pid} is training in this folder (it "
                                    f"holds {save / '.lock'}); wait for it to end or choose another folder")
        assert sorted(p.name for p in save.iterdir()) == [".lock"]
        r = run([*args, "--resume"], ok=False)
        assert f"process {proc.pid} is training in this folder" in r.stderr
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    r = run(args)  # the lock of a killed process is taken over, with a note
    assert f"took over {save / '.lock'} from process {proc.pid}, which ended without releasing it" in r.stderr
    assert (save / "last.pt").is_file() and not (save / ".lock").exists()
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "new", "--resume"], ok=False)
    assert "no " in r.stderr and not (tmp_path / "new").exists()  # the lock's folder goes with a refused run


def test_a_run_beside_a_live_training_is_refused(corpus_dir, tmp_path):
    save = tmp_path / "run"
    args = [sys.executable, "-m", "nmtkit", "train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL,
            "--max-steps", 100_000, "--valid-every", 100_000, "--threads", 1]
    first = subprocess.Popen([str(a) for a in args], stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while not (save / ".lock").exists() and time.time() < deadline:
            time.sleep(0.05)
        second = subprocess.run([str(a) for a in args], capture_output=True, text=True)
        assert first.poll() is None  # still training
        assert second.returncode == 1 and f"process {first.pid} is training in this folder" in second.stderr
    finally:
        first.terminate()
        first.wait()


def test_a_lock_file_that_nmtkit_did_not_write_is_left_alone(corpus_dir, tmp_path):
    save = tmp_path / "run"
    save.mkdir()
    (save / ".lock").write_text("my notes\n")
    r = run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 1], ok=False)
    assert r.exit_code == 2 and r.stderr == (f"error: --save-dir {save}: holds a file .lock that is not a run's "
                                             "lock; remove it or choose another folder\n")
    assert (save / ".lock").read_text() == "my notes\n" and sorted(p.name for p in save.iterdir()) == [".lock"]


def test_a_file_system_that_cannot_lock_trains_unlocked_with_a_warning(corpus_dir, tmp_path, monkeypatch):
    import errno
    import fcntl

    def cannot(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", cannot)
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "run", *TINY_MODEL, "--max-steps", 1,
             "--valid-every", 1, "--valid-max-sentences", 2])
    assert f"warning: --save-dir {tmp_path / 'run'}: this file system cannot lock" in r.stderr
    assert (tmp_path / "run" / "last.pt").is_file()


def test_outputs_under_a_file_are_one_line(corpus_dir, trained_ckpt, tmp_path):
    (tmp_path / "afile").write_text("mine\n")
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "afile" / "run", *TINY_MODEL], ok=False)
    assert r.stderr == f"error: --save-dir {tmp_path / 'afile' / 'run'}: {tmp_path / 'afile'} is a file, not a folder\n"
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "afile", *TINY_MODEL], ok=False)
    assert r.stderr == f"error: --save-dir {tmp_path / 'afile'}: a file, not a folder\n"
    r = run(["demo-corpus", tmp_path / "afile" / "d"], ok=False)
    assert r.stderr == f"error: FOLDER {tmp_path / 'afile' / 'd'}: {tmp_path / 'afile'} is a file, not a folder\n"
    r = run(["translate", "-m", trained_ckpt, "-o", tmp_path / "afile" / "out.txt"], input="one\n", ok=False)
    assert r.stderr == (f"error: --output {tmp_path / 'afile' / 'out.txt'}: {tmp_path / 'afile'} is a file, not a "
                        "folder\n") and (tmp_path / "afile").read_text() == "mine\n"


def test_no_command_replaces_the_current_folder_or_a_folder_of_another_tool(text_dir, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "manifest.json").write_text('{"files": ["photos.tar", "notes.txt"]}')  # another tool's manifest
    (work / "photos.tar").write_text("mine\n")
    args = ["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
            "--vocab", "word:100"]
    r = run([*args, "-o", work, "--overwrite"], ok=False)
    assert "not made by nmtkit, so --overwrite leaves it alone" in r.stderr and (work / "photos.tar").exists()
    (work / "train.en").write_text("mine\n")
    r = run(["demo-corpus", work], ok=False)  # it replaces only its own corpus
    assert "not made by nmtkit, so this command leaves it alone" in r.stderr
    assert (work / "train.en").read_text() == "mine\n"
    monkeypatch.chdir(work)
    for out in (".", "..", "sub/.."):
        r = run([*args, "-o", out, "--overwrite"], ok=False)
        assert f"-o {out}: the current folder or one above it" in r.stderr


def test_a_link_to_an_output_folder_stays_a_link(text_dir, tmp_path):
    (tmp_path / "big").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "big")
    args = ["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
            "--vocab", "word:100", "-o", tmp_path / "link"]
    run(args)
    run([*args, "--overwrite"])
    assert (tmp_path / "link").is_symlink() and (tmp_path / "big" / "manifest.json").is_file()
