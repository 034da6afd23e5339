"""Decoding: greedy and batched beam search over any model's ``decode_step``."""
from nmtkit.search.beam import beam_search  # noqa: F401
from nmtkit.search.greedy import greedy_search  # noqa: F401
from nmtkit.search.hypothesis import Hypothesis  # noqa: F401
