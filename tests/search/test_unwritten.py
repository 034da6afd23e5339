"""No search writes ``<pad>`` or ``<s>``, however likely the model makes them (nmtkit/search/unwritten.py)."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.vocab import BOS, EOS, PAD
from nmtkit.search import beam_search, greedy_search
from nmtkit.search.constrained import constrained_beam_search
from nmtkit.search.sampling import Sampler
from tests.search.scripted import ScriptedModel

# <pad> and <s> the likeliest at every step; besides them only the word 4 (once) and </s>
FAVOURED = {(): {PAD: 0.5, BOS: 0.3, 4: 0.15, EOS: 0.05}, (4,): {PAD: 0.6, BOS: 0.2, EOS: 0.2}}
MODEL = ScriptedModel(scripts={0: FAVOURED, 1: FAVOURED})
BATCH = make_batch([[5, 6], [7]])


def outputs(found):
    return [[h.tokens for h in hyps] for hyps in found]


def test_greedy_and_sampling_write_the_best_word_instead():
    """(Greedy wrote <pad>: an empty text, counted as two tokens.)"""
    assert outputs(greedy_search(MODEL, BATCH, 0.0, 5)) == [[[4]], [[4]]]
    sampled = greedy_search(MODEL, BATCH, 0.0, 5, pick=Sampler(0, 5.0, torch.Generator().manual_seed(0)))
    assert all(set(tokens) <= {4} for [tokens] in outputs(sampled))


@pytest.mark.parametrize("search", ["beam", "constrained"])
def test_a_beam_holds_no_hypothesis_with_them(search):
    """(n-best lists showed one text twice, once with a <pad> written in it.)"""
    if search == "beam":
        found = beam_search(MODEL, BATCH, beam_size=4, n_best=4, max_len_a=0.0, max_len_b=5)
    else:
        found = constrained_beam_search(MODEL, BATCH, [[], []], 4, 4, max_len_a=0.0, max_len_b=5)
    assert outputs(found) == [[[4], []]] * 2  # (the two outputs without them, best first)
