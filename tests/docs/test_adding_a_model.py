"""docs/adding-a-model.md's worked example: a toy architecture from outside nmtkit trains, decodes and is tested like
any model. (tests/docs/test_examples.py runs the page's shell examples too.)"""
import re
import sys

import pytest

from nmtkit.models.registry import MODELS
from tests.conftest import TINY_MODEL, run
from tests.models import test_contract as contract

DOCS = __import__("pathlib").Path(__file__).parents[2] / "docs" / "adding-a-model.md"


@pytest.fixture
def toy_plugin(tmp_path, monkeypatch):
    """The example module of docs/adding-a-model.md as ``mymodels.toy_gru``, loaded through NMTKIT_PLUGINS."""
    page = DOCS.read_text(encoding="utf-8")
    code = re.search(r"<!-- file: mymodels/toy_gru.py -->\n```python\n(.*?)```", page, re.S).group(1)
    (tmp_path / "mymodels").mkdir()
    (tmp_path / "mymodels" / "__init__.py").write_text("")
    (tmp_path / "mymodels" / "toy_gru.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NMTKIT_PLUGINS", "mymodels.toy_gru")
    yield
    MODELS.pop("toy-gru", None)
    for name in [m for m in sys.modules if m.startswith("mymodels")]:
        del sys.modules[name]
    from nmtkit.models import registry

    registry._plugins_loaded.discard("mymodels.toy_gru")


@pytest.mark.parametrize("check", [contract.test_teacher_forced_forward_equals_step_by_step_decoding,
                                   contract.test_reorder_moves_every_state,
                                   contract.test_a_sentence_does_not_depend_on_its_batch], ids=lambda f: f.__name__)
def test_the_example_keeps_the_contract_of_every_architecture(toy_plugin, check):
    check("toy-gru")  # what tests/models/test_contract.py checks of every registered architecture


def test_the_example_survives_a_checkpoint_round_trip(toy_plugin, tmp_path):
    contract.test_a_checkpoint_round_trip_gives_the_same_model("toy-gru", tmp_path)


def test_the_example_trains_and_translates_through_the_cli(toy_plugin, corpus_dir, tmp_path):
    help_text = run(["train", "--arch", "toy-gru", "--help"]).stdout
    assert "Options of --arch toy-gru" in help_text and "--hidden-size" in help_text
    r = run(["train", "--data", corpus_dir, "--arch", "toy-gru", *TINY_MODEL], ok=False)
    assert "--enc-size: not an option of --arch toy-gru but of" in r.stderr
    save = tmp_path / "toy"
    run(["train", "--data", corpus_dir, "--arch", "toy-gru", "--hidden-size", 24, "--save-dir", save,
         "--max-steps", 4, "--valid-every", 4, "--valid-max-sentences", 5])
    out = run(["translate", "-m", save / "last.pt", "--beam", 2], input="forty-two\n\nseven\n").stdout
    assert len(out.split("\n")) == 4
    assert run(["score", "--metric", "ppl", "-m", save / "last.pt", "--src", corpus_dir / "valid.en",
                "-r", corpus_dir / "valid.de"]).stdout.startswith("PPL = ")
