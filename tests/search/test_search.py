"""Greedy and beam search: beam 1 = greedy, batch- and order-independence, limits, n-best."""
import random

import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.inference import load_model
from nmtkit.models import build_model
from nmtkit.search import beam_search, greedy_search
from nmtkit.search.translator import SearchOptions, translate_ids
from tests.conftest import TINY_CONFIG, forward, unpack


def random_model():
    torch.manual_seed(0)
    return build_model({**TINY_CONFIG, "param_init": 0.6}, CorpusMeta.text(30, 25)).eval()


def sources(n=13, seed=3):
    g = random.Random(seed)
    return [[g.randrange(4, 30) for _ in range(g.randrange(1, 10))] for _ in range(n)]


def test_beam_one_equals_greedy():
    m, src = random_model(), sources()
    g = greedy_search(m, make_batch(src), attention=True)
    b = beam_search(m, make_batch(src), beam_size=1, attention=True)
    for x, y in zip(g, b):
        assert x[0].tokens == y[0].tokens
        assert x[0].logprob == pytest.approx(y[0].logprob, abs=1e-4)
        assert (x[0].attention["source"] == y[0].attention["source"]).all()


@pytest.mark.parametrize("beam", [1, 4])
def test_output_does_not_depend_on_batch_size_or_order(beam):
    m, src = random_model(), sources(17)
    ref = [h[0].tokens for h in translate_ids(m, src, SearchOptions(beam_size=beam, batch_size=17), torch.device("cpu"))]
    for bs in (1, 3, 8):
        got = translate_ids(m, src, SearchOptions(beam_size=beam, batch_size=bs), torch.device("cpu"))
        assert [h[0].tokens for h in got] == ref
    perm = list(range(len(src)))
    random.Random(1).shuffle(perm)
    got = translate_ids(m, [src[i] for i in perm], SearchOptions(beam_size=beam, batch_size=5), torch.device("cpu"))
    assert [h[0].tokens for h in got] == [ref[i] for i in perm]


def test_length_limit_is_respected():
    m, src = random_model(), sources()
    for hyps in (greedy_search(m, make_batch(src), max_len_a=0.5, max_len_b=2),
                 beam_search(m, make_batch(src), 3, max_len_a=0.5, max_len_b=2)):
        for s, h in zip(src, hyps):
            assert len(h[0].tokens) <= int(0.5 * len(s) + 2)


def test_n_best_is_sorted_and_distinct():
    m, src = random_model(), sources(4)
    for hyps in beam_search(m, make_batch(src), beam_size=5, n_best=5, length_penalty=1.0):
        scores = [h.score for h in hyps]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in hyps}) == len(hyps) == 5


def test_beam_finds_at_least_the_greedy_score_with_raw_probabilities():
    m, src = random_model(), sources()
    g = greedy_search(m, make_batch(src))
    b = beam_search(m, make_batch(src), beam_size=6, length_penalty=0.0)
    for x, y in zip(g, b):
        assert y[0].logprob >= x[0].logprob - 1e-4


def test_hypothesis_scores_are_the_model_log_probabilities():
    m, src = random_model(), sources(3)
    hyps = beam_search(m, make_batch(src), beam_size=3, length_penalty=0.0)
    for s, h in zip(src, hyps):
        tokens = h[0].tokens
        b = make_batch([s], [tokens])
        with torch.no_grad():
            logits, _ = forward(m, b)
        lp = torch.log_softmax(logits, -1)[0].gather(1, b.tgt_out[0].unsqueeze(1)).sum()
        assert float(lp) == pytest.approx(h[0].logprob, abs=1e-3)


def test_attention_rows_cover_each_output_token(trained_ckpt):
    m, sv, tv = unpack(load_model(trained_ckpt))
    hyps = beam_search(m, make_batch([sv.encode("forty-two"), sv.encode("one hundred")]), 3, attention=True)
    for h in hyps:
        a = h[0].attention["source"]
        assert a.shape[0] == len(h[0].tokens) + 1
        assert torch.allclose(torch.from_numpy(a).sum(-1), torch.ones(a.shape[0]), atol=1e-5)
