"""Loading a model for decoding: what it was built from, and commands that read one text input."""
import pytest

from nmtkit.errors import NmtkitError
from nmtkit.inference import load_model


def test_a_loaded_model_comes_with_its_vocabularies_config_and_streams(trained_ckpt):
    loaded = load_model(trained_ckpt)
    assert not loaded.model.training and loaded.config["arch"] == "rnnsearch"
    assert list(loaded.meta.streams) == ["src", "tgt"] and loaded.tgt_vocab is loaded.vocabs["tgt"]
    assert loaded.text_vocab("src").encode("forty-two") == loaded.vocabs["src"].encode("forty-two")


def test_a_model_reading_several_inputs_is_refused_by_one_input_commands(trained_ckpt):
    loaded = load_model(trained_ckpt)
    loaded.model.inputs = ("src", "mt")
    with pytest.raises(NmtkitError, match="reads the inputs src, mt; this command reads one text input"):
        loaded.text_vocab("src")
