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


def test_train_help_lists_the_model_options():
    out = run(["train", "--help"]).stdout
    for flag in ("--dec-size", "--tie-embeddings", "--batch-type", "--resume", "--init-from", "--max-time"):
        assert flag in out


def test_demo_corpus(tmp_path):
    run(["demo-corpus", tmp_path / "d", "--train", 50, "--valid", 5, "--test", 5])
    en = (tmp_path / "d" / "train.en").read_text().splitlines()
    de = (tmp_path / "d" / "train.de").read_text().splitlines()
    assert len(en) == len(de) == 50
    valid = set((tmp_path / "d" / "valid.en").read_text().splitlines())
    assert not valid & set(en)
