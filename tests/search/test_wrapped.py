"""A wrapped model hands on to the model it wraps what the search asks, as it was asked (a shortlist, a prefix and
token costs are wrappers: each overrides only what it changes)."""
from nmtkit.search.wrapped import Wrapped


class Inner:
    """A model that records what it was asked and answers by its own values."""

    inputs, attention_labels, merges_states = ("src", "mt"), {"source": "src"}, True

    def __init__(self):
        self.asked: list[tuple] = []

    def encode(self, batch):
        self.asked.append(("encode", batch))
        return "state"

    def decode_step(self, prev, state):
        self.asked.append(("decode_step", prev, state))
        return "logits", "next", {}

    def output_ids(self, tokens):
        return [t + 1 for t in tokens]

    def max_output_len(self, batch, a, b):
        return (batch, a, b)

    def input_limit(self):
        return 7

    def output_limit(self):
        return 9

    def choose_attention(self, layer=None, head=None):
        self.asked.append(("choose_attention", layer, head))


def test_a_wrapped_model_answers_as_the_model_it_wraps():
    inner = Inner()
    wrapped = Wrapped(inner)
    assert (wrapped.inputs, wrapped.attention_labels, wrapped.merges_states) == (("src", "mt"), {"source": "src"}, True)
    assert (wrapped.input_limit(), wrapped.output_limit()) == (7, 9)
    assert wrapped.output_ids([1, 2]) == [2, 3] and wrapped.max_output_len("b", 1.5, 10) == ("b", 1.5, 10)
    assert wrapped.encode("batch") == "state" and wrapped.decode_step("prev", "state") == ("logits", "next", {})
    wrapped.choose_attention(layer=2, head=3)
    wrapped.choose_attention(head=1)
    assert inner.asked == [("encode", "batch"), ("decode_step", "prev", "state"), ("choose_attention", 2, 3),
                           ("choose_attention", None, 1)]
