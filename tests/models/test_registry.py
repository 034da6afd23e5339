import pytest

from nmtkit.errors import NmtkitError
from nmtkit.models import build_model, get_spec, model_names, model_options, register_model


def test_rnnsearch_is_registered_with_its_options():
    assert "rnnsearch" in model_names()
    names = {o.name for o in get_spec("rnnsearch").options}
    assert {"emb_size", "enc_size", "dec_size", "dropout", "tie_embeddings"} <= names
    assert len({o.name for o in model_options()}) == len(model_options())


def test_unknown_architecture_is_a_clear_error():
    with pytest.raises(NmtkitError, match="unknown architecture 'nope'"):
        build_model({"arch": "nope"}, 10, 10)


def test_registering_a_name_twice_fails():
    with pytest.raises(ValueError):
        register_model("rnnsearch")(lambda c, s, t: None)
