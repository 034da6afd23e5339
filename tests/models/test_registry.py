"""The registry: each architecture with its own options, builders given the corpus streams and vocabularies."""
import sys

import pytest

from nmtkit.config import POSITIVE, Option
from nmtkit.data.streams import FEATURES, TOKENS, CorpusMeta, StreamInfo
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model, get_spec, model_names, register_model, registry
from nmtkit.models.registry import MODELS, owners


@pytest.fixture
def toy():
    """A registered architecture with its own ``layers`` (default 6) that records what its builder got."""
    seen = {}

    @register_model("toy-layers", [Option("layers", 6, "toy layers", allows=POSITIVE)], "a test architecture")
    def build(config, meta, vocabs):
        seen.update(config=config, meta=meta, vocabs=vocabs)
        return "built"

    yield seen
    MODELS.pop("toy-layers")


def test_rnnsearch_is_registered_with_its_options():
    assert {"rnnsearch", "luong", "target-attn", "bitatt-rnn"} <= set(model_names())
    names = {o.name for o in get_spec("rnnsearch").options}
    assert {"emb_size", "enc_size", "dec_size", "dropout", "tie_embeddings"} <= names and "layers" not in names


def test_an_architecture_gets_its_own_defaults_not_another_ones(toy):
    meta = CorpusMeta({"src": StreamInfo(TOKENS, 10), "image": StreamInfo(FEATURES, 512), "tgt": StreamInfo(TOKENS, 9)})
    assert build_model({"arch": "toy-layers"}, meta, {"tgt": "vocab"}) == "built"
    assert toy["config"] == {"layers": 6, "arch": "toy-layers"}  # luong, registered first, has layers 2
    assert toy["meta"].inputs["image"] == StreamInfo(FEATURES, 512) and toy["vocabs"] == {"tgt": "vocab"}
    assert get_spec("luong").option("layers").default == 2
    assert owners("layers") == ["luong", "toy-layers"]


def test_only_the_chosen_architecture_keys_reach_the_builder(toy):
    build_model({"arch": "toy-layers", "layers": 3, "emb_size": 64, "lr": 0.1}, CorpusMeta.text(5, 5))
    assert toy["config"] == {"layers": 3, "arch": "toy-layers"}


def test_unknown_architecture_and_missing_streams_are_clear_errors():
    with pytest.raises(NmtkitError, match="unknown architecture 'nope'"):
        build_model({"arch": "nope"}, CorpusMeta.text(10, 10))
    images = CorpusMeta({"image": StreamInfo(FEATURES, 512), "tgt": StreamInfo(TOKENS, 9)})
    with pytest.raises(NmtkitError, match="rnnsearch reads a tokens stream named 'src'; the corpus has: image"):
        build_model({"arch": "rnnsearch"}, images)


def test_registering_a_name_or_an_option_twice_fails():
    with pytest.raises(ValueError, match=r"^model 'rnnsearch' is registered already \(by nmtkit.models.rnnsearch\)"):
        register_model("rnnsearch")(lambda c, m, v: None)
    with pytest.raises(ValueError):
        register_model("twice", [Option("a", 1, "", allows=POSITIVE), Option("a", 2, "", allows=POSITIVE)])(lambda c, m, v: None)
    assert "twice" not in model_names()


@pytest.mark.parametrize("body, says", [
    ("def build(:\n", "(SyntaxError: "),
    ("from nmtkit.models import register_model\n\n\n@register_model('rnnsearch')\ndef build(c, m, v):\n    pass\n",
     "(ValueError: model 'rnnsearch' is registered already (by nmtkit.models.rnnsearch); give this one another name)"),
    ("raise RuntimeError('no GPU here')\n", "(RuntimeError: no GPU here)")])
def test_a_plugin_that_fails_as_it_is_imported_is_one_line_each_time(tmp_path, monkeypatch, body, says):
    """(only an ImportError was one line: other errors were tracebacks, and a second call of the registry skipped
    the plugin as if it had been imported)"""
    (tmp_path / "broken_plugin.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NMTKIT_PLUGINS", "broken_plugin")
    try:
        for _ in range(2):
            with pytest.raises(NmtkitError) as e:
                model_names()
            assert str(e.value).startswith("NMTKIT_PLUGINS: cannot import 'broken_plugin' ") and says in str(e.value)
            assert e.value.exit_code == 2
    finally:
        registry._plugins_loaded.discard("broken_plugin")
        sys.modules.pop("broken_plugin", None)


def test_every_plugin_named_is_imported_and_the_names_are_sorted(tmp_path, monkeypatch):
    for module, arch in (("plugin_one", "zz-one"), ("plugin_two", "aa-two")):
        (tmp_path / f"{module}.py").write_text("from nmtkit.models import register_model\n\n\n"
                                               f"@register_model({arch!r})\ndef build(config, meta, vocabs):\n"
                                               "    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NMTKIT_PLUGINS", " plugin_one, plugin_two ,")
    try:
        names = model_names()
        assert {"zz-one", "aa-two"} <= set(names) and names == sorted(names) and names[0] == "aa-two"
    finally:
        for module, arch in (("plugin_one", "zz-one"), ("plugin_two", "aa-two")):
            MODELS.pop(arch, None)
            registry._plugins_loaded.discard(module)
            sys.modules.pop(module, None)
