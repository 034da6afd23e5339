"""Where inputs are read from: how many tokens of a text input are read, and what sets that (tests/search/
test_multi_input.py and tests/cli/test_translate.py read inputs through them)."""
from types import SimpleNamespace

from nmtkit.search.sources import reading_limit


def test_the_model_s_positions_cap_what_is_read_where_fewer_than_max_input_len():
    limited = SimpleNamespace(input_limit=lambda: 50)  # (a Transformer with 51 positions: 50 tokens and </s>)
    assert reading_limit(limited, 250) == (50, "the most this model reads: its 51 positions")
    assert reading_limit(limited, None) == (50, "the most this model reads: its 51 positions")
    assert reading_limit(limited, 10) == (10, "--max-input-len")
    assert reading_limit(SimpleNamespace(input_limit=lambda: None), 250) == (250, "--max-input-len")
