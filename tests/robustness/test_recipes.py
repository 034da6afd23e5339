"""The recipes and bench scripts against hostile input (issue 30, round 3): a work folder is cleared only if the
script made it (its .nmtkit-workdir marker), never while a process trains in it; a failing inner Python step shows
the recipe's one error line and no traceback; a dry run names every missing input, one line each, and exits non-zero.
"""
from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.recipes.mirror import lines, parallel, run_recipe, sgm, tgz
from tests.recipes.test_lib import script as lib_script

ROOT = Path(__file__).parents[2]
RECIPES = sorted(p for p in (ROOT / "recipes").glob("*.sh") if p.read_text().startswith("#!"))  # not the parts
SCRIPTS = sorted([*(ROOT / "recipes").glob("*.sh"), *(ROOT / "bench").glob("*.sh")])
DEMO = ROOT / "recipes" / "demo.sh"
MARKER = ".nmtkit-workdir"


def refusal(folder: Path) -> str:
    return (f"error: {folder}: exists and was not made by this script (no {MARKER} marker); remove it yourself or "
            "choose another folder\n")


def sourced(script: Path) -> list[Path]:
    """The parts ``script`` sources (source "$(dirname "$0")/NAME"), and theirs."""
    code = "\n".join(line for line in script.read_text().splitlines() if not line.lstrip().startswith("#"))
    found = re.findall(r'source "\$\(dirname "\$\{?(?:0|BASH_SOURCE\[0\])\}?"\)/([\w.]+)"', code)
    parts = [script.parent / name for name in found]
    return [p for part in parts for p in (part, *sourced(part))]


def header_inputs(script: Path) -> tuple[list[str], bool]:
    """The inputs a recipe's header lists: the '#   NAME  ...' lines of its '# Inputs' block and of the parts it
    sources; and whether they are alternatives (the block says "the first given of")."""
    names, alternatives = [], False
    for part in (script, *sourced(script)):
        state = "out"
        for line in part.read_text().splitlines():
            if not line.startswith("#"):
                break  # the header ends
            name = re.match(r"#   ([A-Z][A-Z0-9_]+)\s", line)
            if re.match(r"# Inputs?\b", line):  # the block's heading, on one line or more
                state, alternatives = "heading", alternatives or "first given" in line
            elif state != "out" and name:
                state = "names"
                names.append(name[1])
            elif state == "heading" and line.startswith("#  "):
                state = "out"  # an indented line that names no input: no list here
            elif state == "names" and not line.startswith("#  "):
                state = "out"  # the list has ended
    return names, alternatives


def run_with(script: Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """``bash SCRIPT ARGS...`` with ``env`` added: for the scripts whose nmtkit is a stand-in (``env`` PATH)."""
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **env})


def stand_in(tmp_path: Path) -> dict:
    """An ``nmtkit`` that logs its arguments to tmp_path/calls and does nothing else, first on the PATH."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "nmtkit").write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/calls"\n')
    (folder / "nmtkit").chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


# 1. a work folder is cleared only if the script made it

def test_no_script_removes_a_folder_but_its_own_part_folders():
    """Every recipe and bench script clears a folder with lib.sh's fresh (it checks the marker), none with rm -r
    (but a FOLDER.part it writes through)."""
    for path in SCRIPTS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\brm\s+(-\w*\s+)*-\w*[rR]", line):
                assert re.search(r'rm -rf "[^"]*\.part"', line), f"{path.name}:{number}: {line.strip()}"


def test_the_demo_refuses_a_folder_it_did_not_make_and_deletes_nothing(tmp_path):
    env = stand_in(tmp_path)
    work = tmp_path / "mine"
    work.mkdir()
    (work / "notes.txt").write_text("mine\n")
    for args in ((str(work),), ("--dry-run", str(work))):
        r = run_with(DEMO, *args, cwd=tmp_path, **env)
        assert r.returncode == 2 and r.stderr == refusal(work) and r.stdout == ""
        assert sorted(p.name for p in work.iterdir()) == ["notes.txt"] and not (tmp_path / "calls").exists()
    (tmp_path / "a-file").write_text("mine\n")
    r = run_with(DEMO, "a-file", cwd=tmp_path, **env)
    assert r.returncode == 2 and r.stderr == ("error: a-file: exists and is not a folder; remove it yourself or "
                                              "choose another folder\n")
    assert (tmp_path / "a-file").read_text() == "mine\n"


def test_the_demo_takes_over_an_empty_folder_and_replaces_the_one_it_made(tmp_path):
    env = stand_in(tmp_path)
    work = tmp_path / "w"
    work.mkdir()
    r = run_with(DEMO, str(work), cwd=tmp_path, **env)
    assert r.returncode == 0, r.stderr
    assert (work / MARKER).exists()
    assert [c.split()[0] for c in (tmp_path / "calls").read_text().splitlines()][:4] == [
        "demo-corpus", "preprocess", "train", "translate"]
    (work / "text").mkdir()
    (work / "text" / "train.en").write_text("an earlier run's\n")
    (work / "test.hyp.de").write_text("an earlier run's\n")
    (work / "notes.txt").write_text("mine\n")  # (put there by the user: not the demo's to remove)
    (work / "my corpus").mkdir()
    r = run_with(DEMO, str(work), cwd=tmp_path, **env)  # as `make demo` twice: what it made is replaced
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in work.iterdir()) == [MARKER, "my corpus", "notes.txt"]


@pytest.mark.parametrize("minutes", ["abc", "0", "0.0"])
def test_the_demo_refuses_a_training_time_that_is_not_one_before_it_clears_its_folder(tmp_path, minutes):
    """(it cleared the earlier demo's folder, made the corpus, then failed at training; 0 meant no time limit)"""
    env = stand_in(tmp_path)
    work = tmp_path / "w"
    (work / "model").mkdir(parents=True)
    (work / MARKER).write_text("")
    r = run_with(DEMO, str(work), cwd=tmp_path, DEMO_MINUTES=minutes, **env)
    assert r.returncode == 2 and r.stderr == f"error: DEMO_MINUTES: expects a number of minutes above 0, got '{minutes}'\n"
    assert (work / "model").is_dir() and not (tmp_path / "calls").exists()


def test_a_folder_that_a_process_trains_in_is_not_cleared(tmp_path):
    env = stand_in(tmp_path)
    work = tmp_path / "w"
    (work / "model").mkdir(parents=True)
    (work / MARKER).write_text("")
    fd = os.open(work / "model" / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as nmtkit train holds its run folder
        r = run_with(DEMO, str(work), cwd=tmp_path, **env)
    finally:
        os.close(fd)
    assert r.returncode == 2 and r.stderr == (f"error: {work}: a process is training in it ({work}/model/.lock is "
                                              "locked); wait for it to end or choose another folder\n")
    assert (work / "model" / ".lock").exists() and not (tmp_path / "calls").exists()


def test_a_bench_script_refuses_a_run_folder_it_did_not_make(tmp_path):
    env = stand_in(tmp_path)
    runs = tmp_path / "runs"
    (runs / "speed").mkdir(parents=True)
    (runs / "speed" / "notes.txt").write_text("mine\n")
    r = run_with(ROOT / "bench" / "rnnsearch_lo_ende.sh", "speed", cwd=tmp_path, RUNS=str(runs),
                 SHARED=str(tmp_path), **env)
    assert (runs / "speed" / "notes.txt").read_text() == "mine\n"
    assert r.returncode == 2 and r.stderr == refusal(runs / "speed")


# 2. a failing inner Python step: the recipe's one error line, no traceback

def assert_one_error_line(r: subprocess.CompletedProcess, stage: str, command: str) -> None:
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines()[-1].startswith(f"error: step {stage} failed: {command}"), r.stderr


def test_an_archive_that_is_not_one_stops_the_recipe_without_a_traceback(tmp_path):
    (tmp_path / "TrainDev.zip").write_text("not a zip archive\n")  # a local input: not checked as downloads are
    r = run_recipe(ROOT / "recipes" / "wmt16_ape.sh", tmp_path / "w", WMT16_APE=str(tmp_path / "TrainDev.zip"))
    assert_one_error_line(r, "1. data", "unzip_into")


def test_text_that_is_not_utf8_stops_the_recipe_without_a_traceback(tmp_path):
    pytest.importorskip("sacremoses")
    en, zh = parallel(4, "de")
    (tmp_path / "train.zh").write_text(lines(zh))
    (tmp_path / "train.en").write_bytes(lines(en).encode() + b"caf\xe9\n")  # Latin-1
    for name in ("nist02", "nist03", "nist04", "nist05", "nist06"):
        (tmp_path / f"{name}.zh").write_text(lines(zh))
        for i in range(4):
            (tmp_path / f"{name}.en{i}").write_text(lines(en))
    r = run_recipe(ROOT / "recipes" / "nist_zhen.sh", tmp_path / "w", NIST_TRAIN=str(tmp_path / "train"),
                   NIST_TEST=str(tmp_path))
    assert_one_error_line(r, "1. data: the LDC training text, NIST02 (dev), NIST03-06; English tokenised",
                          "moses tokenize en")


def test_an_archive_without_the_file_it_should_hold_stops_the_recipe_without_a_traceback(tmp_path):
    pytest.importorskip("sacremoses")
    en, de = parallel(4, "de")
    pair = {".en": lines(en), ".de": lines(de)}
    archives = {
        "EUROPARL": tgz(tmp_path / "ep.tgz", {f"training/europarl-v7.de-en{k}": v for k, v in pair.items()}),
        "COMMONCRAWL": tgz(tmp_path / "cc.tgz", {f"commoncrawl.de-en{k}": v for k, v in pair.items()}),
        "NEWS_COMMENTARY": tgz(tmp_path / "nc.tgz", {f"training/news-commentary-v9.de-en{k}": v
                                                     for k, v in pair.items()}),
        "WMT14_DEV": tgz(tmp_path / "dev.tgz", {f"dev/newstest201{y}{k}": v for k, v in pair.items() for y in "23"}),
        "WMT14_TEST": tgz(tmp_path / "test.tgz", {"test-full/newstest2014-deen-ref.de.sgm": sgm(de, "refset")}),
    }  # test.tgz: no newstest2014-deen-src.en.sgm
    r = run_recipe(ROOT / "recipes" / "wmt14_ende.sh", tmp_path / "w", **{k: str(v) for k, v in archives.items()})
    assert_one_error_line(r, "1. data: Europarl v7, Common Crawl, News Commentary v9; newstest2012+2013, "
                             "newstest2014; Moses tokenisation", "segments")
    assert "newstest2014-deen-src.en.sgm: No such file or directory" in r.stderr


def interruptible() -> None:
    """In the child, before exec: SIGINT handled by default, as in a terminal's foreground job. A process started in
    the background by a shell without job control (`make test &`, CI runners) has SIGINT ignored, and its children
    inherit that: the recipe's Python would never see the Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_an_interrupted_python_step_is_one_line_too(tmp_path):
    """Ctrl-C (SIGINT to the whole process group) while lib.sh's segments waits for its input: "interrupted", then
    the recipe's error line, as when an nmtkit command is interrupted."""
    os.mkfifo(tmp_path / "fifo")  # opened, never written: segments waits on it
    path = tmp_path / "demo.sh"
    path.write_text(f'set -euo pipefail\nsource "{ROOT}/recipes/lib.sh"\noptions "{tmp_path}/w" "$@"\n'
                    f'stage s\ninto "{tmp_path}/out" segments "{tmp_path}/fifo"\n')
    p = subprocess.Popen(["bash", str(path)], stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=interruptible)
    deadline = time.monotonic() + 60
    while True:  # the writing end opens once python has opened the reading end: then it waits for lines
        try:
            fd = os.open(tmp_path / "fifo", os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            assert time.monotonic() < deadline and p.poll() is None, "segments never opened its input"
            time.sleep(0.05)
    os.killpg(p.pid, signal.SIGINT)
    stderr = p.communicate(timeout=30)[1]
    os.close(fd)
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert p.returncode == 1 and stderr.splitlines()[-2:] == [
        "interrupted", f"error: step s failed: segments {tmp_path}/fifo > {tmp_path}/out"], stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.part").exists()


def test_lib_python_helpers_fail_in_one_line(tmp_path):
    (tmp_path / "latin1").write_bytes(b"caf\xe9\n")
    r = lib_script(tmp_path, f'stage s\ninto "{tmp_path}/o" segments "{tmp_path}/none.sgm"')
    assert r.returncode == 1 and r.stderr.splitlines() == [
        "== s", f"error: {tmp_path}/none.sgm: No such file or directory",
        f"error: step s failed: segments {tmp_path}/none.sgm > {tmp_path}/o"]
    r = lib_script(tmp_path, f'stage s\ninto "{tmp_path}/o" segments "{tmp_path}/latin1"')
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[1].startswith("error: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9")


# 3. a dry run checks the inputs

@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.name)
def test_a_dry_run_names_every_missing_input_one_line_each(recipe, tmp_path):
    names, alternatives = header_inputs(recipe)
    work = tmp_path / "w"
    if not names:  # nothing to check: the dry run prints the commands
        r = run_recipe(recipe, work, "--dry-run")
        assert r.returncode == 0 and r.stdout, r.stderr
        assert not work.exists()
        return
    (tmp_path / "missing").mkdir()
    missing = {name: str(tmp_path / "missing" / name) for name in names}
    r = run_recipe(recipe, work, "--dry-run", **missing)
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert r.returncode == 2, r.stderr
    assert all(line.startswith(("== ", "error: ")) for line in r.stderr.splitlines()), r.stderr  # nothing else
    for name in names[:1] if alternatives else names:  # all of them, each named
        assert any(e.startswith(f"error: {name}: ") and missing[name] in e for e in errors), (name, r.stderr)
    assert r.stdout == "" and not work.exists()  # before any step
    for name in names if len(names) > 1 else []:  # each alone too (an alternative is read when it comes first)
        r = run_recipe(recipe, work, "--dry-run", **{name: missing[name]})
        assert r.returncode == 2 and f"error: {name}: {missing[name]}" in r.stderr, (name, r.stderr)


def test_every_recipe_but_the_demo_lists_its_inputs():
    assert {p.name for p in RECIPES if not header_inputs(p)[0]} == {"demo.sh"}


def test_the_demo_follows_the_conventions_of_every_recipe(tmp_path):
    work = tmp_path / "w"
    r = run_recipe(DEMO, work, "--dry-run")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for command in (f"nmtkit demo-corpus {work}/text", f"nmtkit preprocess --train {work}/text/train",
                    f"nmtkit train --data {work}/data", f"nmtkit translate -m {work}/model/best.pt",
                    f"nmtkit score --metric bleu -r {work}/text/test.de", "nmtkit score --metric chrf"):
        assert command in out, out
    assert f"touch {work}/{MARKER}" in out
    assert not work.exists()
    r = run_recipe(DEMO, work, "-h")
    assert r.returncode == 0 and r.stdout.startswith("usage: recipes/demo.sh [--dry-run] [--gpus N] [WORKDIR]")


@pytest.mark.parametrize("script, made", [
    ("flickr30k.sh", ["data/manifest.json"]),
    ("multi30k_mmt.sh", ["data/manifest.json", *(f"text/{s}.{e}" for s in ("train", "val", "test")
                                                  for e in ("en", "de", "img"))]),
    ("wmt16_ape.sh", [f"text/{s}.{e}" for s in ("train", "dev", "test") for e in ("src", "mt", "pe")]),
    ("nist_zhen.sh", [*(f"text/{s}.{e}" for s in ("train", "dev") for e in ("zh", "en")),
                      *(f"text/nist0{k}.zh" for k in range(3, 7)),
                      *(f"refs/nist0{k}.ref{i}" for k in range(3, 7) for i in range(4))]),
])
def test_a_run_that_made_its_data_goes_on_without_the_inputs_only_that_step_reads(tmp_path, script, made):
    """(docs/recipes.md: inputs that only an already-finished step would read are not needed; the images, the APE
    data and the LDC files were asked for all the same, exit 2)"""
    work = tmp_path / "w"
    for name in made:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text("{}\n" if name.endswith(".json") else "")
    (work / ".nmtkit-recipe").write_text(f"{script}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("FLICKR30K_IMAGES", "WMT16_APE", "NIST_TRAIN", "NIST_TEST")}
    r = subprocess.run(["bash", str(ROOT / "recipes" / script), "--dry-run", str(work)], capture_output=True,
                       text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0 and "error" not in r.stderr, r.stderr
