"""What guides a search besides its inputs (target prefixes, constraints): a prefix longer than the model outputs is
cut there with a warning; the guides are no inputs whose tokens an attention file labels."""
from types import SimpleNamespace

from nmtkit.data.vocab import WordVocab
from nmtkit.search.guides import GuidedSources, prefix_source


def test_a_prefix_longer_than_the_model_outputs_is_cut_at_its_limit(capsys):
    vocab = WordVocab(["a", "b", "c", "d", "e"])
    source = prefix_source(vocab, 3, "pre.txt")
    assert source.read(0, b"a b c d e\n") == vocab.encode("a b c")
    assert source.truncated == 1
    assert "pre.txt:1: 5 tokens, truncated to 3 (the most this model outputs)" in capsys.readouterr().err
    assert prefix_source(vocab, None, "pre.txt").read(1, b"a b c d e\n") == vocab.encode("a b c d e")


def test_only_the_model_s_inputs_are_labelled_not_its_guides():
    class Inputs:
        name, fields = "in.txt", ["src"]

        def labels(self, inputs):
            return {stream: [f"t{i}" for i in item] for stream, item in inputs.items()}

    guided = GuidedSources(Inputs(), [SimpleNamespace(stream="prefix"), SimpleNamespace(stream="constraints")])
    assert guided.fields == ["src", "prefix", "constraints"]
    assert guided.labels({"src": [4, 5], "prefix": [6], "constraints": [[7]]}) == {"src": ["t4", "t5"]}
