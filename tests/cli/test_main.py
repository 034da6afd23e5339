"""The command group, --help everywhere, --version, and demo-corpus."""
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


def test_train_help_lists_the_architectures_and_each_one_its_own_options():
    out = run(["train", "--help"]).stdout
    for flag in ("--arch", "--batch-type", "--resume", "--init-from", "--max-time", "--lr-schedule"):
        assert flag in out
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
