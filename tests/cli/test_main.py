"""The command group, --help everywhere, --version, and demo-corpus."""
import subprocess
import sys

import click
import pytest

from nmtkit import __version__
from nmtkit.cli import main
from tests.conftest import run


def test_version():
    assert run(["--version"]).stdout.strip() == f"nmtkit, version {__version__}"


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_subcommand_has_help(command):
    r = run([command, "--help"])
    assert "Usage: " in r.stdout and len(r.stdout) > 200


def test_commands_without_models_do_not_import_torch(tmp_path):
    """Subcommands are imported on use, so scoring a file (as in ``translate | score`` pipelines) starts in a
    fraction of a second instead of loading torch; only the commands that run models load it."""
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("a b c\n")
    code = ("import sys; from nmtkit.cli import main\n"
            "try: main(sys.argv[1:])\nexcept SystemExit as e: assert not e.code, e.code\n"
            "print('torch' in sys.modules)")
    for args in (["score", "-r", hyp, "-i", hyp], ["score", "--metric", "ter", "-r", hyp, "-i", hyp],
                 ["bucket-bleu", "--help"], ["translate", "--help"], ["caption", "--help"]):
        out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, check=True)
        assert out.stdout.splitlines()[-1] == "False", args
    out = subprocess.run([sys.executable, "-c", code, "train", "--help"], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "True"  # the check sees torch where it is loaded


def test_lazy_commands_hold_added_commands_too():
    from nmtkit.cli import LazyCommands

    commands = LazyCommands({"score": "score"})
    commands["extra"] = click.Command("extra")  # as click's add_command does
    assert "extra" in commands and "other" not in commands and commands.get("other") is None
    assert list(commands) == ["score", "extra"] and len(commands) == 2
    assert commands.get("score").name == "score" and [c.name for c in commands.values()] == ["score", "extra"]


def test_train_help_lists_the_architectures_and_each_one_its_own_options():
    out = run(["train", "--help"]).stdout
    for flag in ("--arch", "--batch-type", "--resume", "--init-from", "--max-time", "--lr-schedule"):
        assert flag in out
    assert "--profile A:B " in out and "--device DEVICE " in out  # (a pattern's form where it names one)
    assert "rnnsearch " in out and "bitatt-rnn " in out and "--dec-size" not in out
    luong = run(["train", "--arch", "luong", "--help"]).stdout
    assert "Options of --arch luong" in luong and "--layers" in luong and "--input-feed" in luong
    assert "--decoder-cell" not in luong and "--batch-type" in luong
    rnnsearch = run(["train", "--arch=rnnsearch", "--help"]).stdout
    assert "--decoder-cell" in rnnsearch and "--layers" not in rnnsearch


def test_demo_corpus(tmp_path):
    run(["demo-corpus", tmp_path / "d", "--train", 50, "--valid", 5, "--test", 5])
    en = (tmp_path / "d" / "train.en").read_text().splitlines()
    de = (tmp_path / "d" / "train.de").read_text().splitlines()
    assert len(en) == len(de) == 50
    valid = set((tmp_path / "d" / "valid.en").read_text().splitlines())
    assert not valid & set(en)


def _closed(command: str, cwd) -> subprocess.CompletedProcess:
    """``command`` run by a shell, where ``<&-``, ``>&-`` and ``2>&-`` close a standard descriptor."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_closed_standard_input_or_output_is_one_line_and_a_closed_error_stream_loses_no_output(
        trained_ckpt, text_dir, tmp_path):
    """(`<&-` and `>&-` were tracebacks, None has no attribute 'isatty'; with `2>&-`, translate wrote its lines and
    exited 1, and with a warning to give it wrote none of them)"""
    nmtkit = f"{sys.executable} -m nmtkit"
    src = text_dir / "test.en"
    r = _closed(f"{nmtkit} translate -m {trained_ckpt} <&-", tmp_path)
    assert r.returncode == 1 and r.stderr.splitlines()[-1] == (
        "error: the standard input is closed (the command was started with <&-): give it a file")
    r = _closed(f"{nmtkit} score -r {src} -i {src} >&-", tmp_path)
    assert r.returncode == 1 and r.stderr == (
        "error: the standard output is closed (the command was started with >&-): give it a file\n")
    assert _closed(f"{nmtkit} translate -m {trained_ckpt} -i {src} -o out.txt >&-", tmp_path).returncode == 0  # (unused)
    for asked in ("--help", "--version", "score --help"):  # (written before a command runs)
        r = _closed(f"{nmtkit} {asked} >&-", tmp_path)
        assert r.returncode == 1 and r.stderr == (
            "error: the standard output is closed (the command was started with >&-): give it a file\n")
    (tmp_path / "in.txt").write_bytes(src.read_bytes()[:200] + b"caf\xe9\n")
    lines = len((tmp_path / "in.txt").read_bytes().splitlines())
    r = _closed(f"{nmtkit} translate -m {trained_ckpt} -i {src} 2>&- > out.txt", tmp_path)
    assert r.returncode == 0 and len((tmp_path / "out.txt").read_text().splitlines()) == len(src.read_text().splitlines())
    for closed in ("2>&-", "2< /dev/null"):  # (a wrapper such as pyenv's shim leaves a file read-only on descriptor 2)
        r = _closed(f"{nmtkit} translate -m {trained_ckpt} -i in.txt {closed} > out.txt", tmp_path)  # (exit 1: invalid)
        assert r.returncode == 1 and len((tmp_path / "out.txt").read_text().splitlines()) == lines
