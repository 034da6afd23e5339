"""Target prefixes: the room the length limit leaves after a prefix (the forcing itself is in the contract of every
architecture, tests/models/test_contract.py)."""
from nmtkit.data.batching import make_batch
from nmtkit.search.prefix import PREFIX, Prefixed, prefix_lengths
from tests.search.scripted import ScriptedModel


def test_the_limit_leaves_b_tokens_after_a_prefix_and_is_the_models_without_one():
    model, b = ScriptedModel(), make_batch([[4, 5], [6], [7, 8, 9]])
    b.inputs[PREFIX] = make_batch({PREFIX: [[4] * 9, [], [5]]})[PREFIX]
    plain = model.max_output_len(b, 1.5, 2).tolist()
    assert prefix_lengths(b).tolist() == [9, 0, 1] and plain[0] < 11
    assert Prefixed(model).max_output_len(b, 1.5, 2).tolist() == [11, plain[1], plain[2]]
