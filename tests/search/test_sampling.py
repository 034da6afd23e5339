"""Sampling against a scripted model whose distributions are known exactly."""
import math
from collections import Counter

import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.vocab import EOS
from nmtkit.search import greedy_search
from nmtkit.search.sampling import Sampler
from tests.search.scripted import ScriptedModel, limit, sources

FIRST = {(): {4: .5, 5: .3, 6: .2}, (4,): {EOS: 1.}, (5,): {EOS: 1.}, (6,): {EOS: 1.}}  # one word, then </s>


def draw(model, src, sampler):
    return greedy_search(model, make_batch(src), 1.5, 2, pick=sampler)


def test_the_top_1_sample_is_the_greedy_output():
    model, src = ScriptedModel(), sources(32)
    sampled = draw(model, src, Sampler(1, 0.7, torch.Generator().manual_seed(0)))
    for g, s in zip(greedy_search(model, make_batch(src), 1.5, 2), sampled):
        assert s[0].tokens == g[0].tokens and s[0].logprob == pytest.approx(g[0].logprob, abs=1e-6)


def test_samples_keep_to_the_top_k_and_score_with_the_model():
    """Every drawn token is among the k most probable of its step (or the </s> forced at the length limit), and a
    sample's log-probability is the model's, not the tempered one."""
    model, src = ScriptedModel(seed=3), sources(64, seed=4)
    for i, (s, [h]) in enumerate(zip(src, draw(model, src, Sampler(2, 1.5, torch.Generator().manual_seed(1))))):
        assert h.logprob == pytest.approx(model.score(i, h.tokens), abs=1e-4)
        for t, word in enumerate(h.tokens + [EOS]):
            lp = model.log_probs(i, tuple(h.tokens[:t]))
            rank = sorted(range(len(lp)), key=lambda w: -lp[w]).index(word)
            assert rank < 2 or (word == EOS and t == limit(s, 1.5, 2))


@pytest.mark.parametrize("k, temperature", [(0, 1.0), (2, 1.0), (0, 2.0)])
def test_draws_follow_the_tempered_restricted_distribution(k, temperature):
    """3,000 draws of the first word: frequencies within 4 standard deviations of softmax(log p / T) over the top
    k (4: .5, 5: .3, 6: .2; top 2 renormalised; T = 2: proportional to √p)."""
    n = 3000
    model = ScriptedModel(scripts={i: FIRST for i in range(n)})
    found = draw(model, [[4]] * n, Sampler(k, temperature, torch.Generator().manual_seed(2)))
    counts = Counter(h[0].tokens[0] for h in found)
    kept = {4: .5, 5: .3, 6: .2} if not k else {4: .5, 5: .3}
    weights = {w: p ** (1 / temperature) for w, p in kept.items()}
    total = sum(weights.values())
    assert set(counts) == set(kept)
    for word, weight in weights.items():
        p = weight / total
        assert abs(counts[word] / n - p) < 4 * math.sqrt(p * (1 - p) / n), (word, counts)


def test_a_seed_gives_the_same_samples():
    model, src = ScriptedModel(), sources(32)
    runs = [[h[0].tokens for h in draw(model, src, Sampler(0, 1.0, torch.Generator().manual_seed(seed)))]
            for seed in (5, 5, 6)]
    assert runs[0] == runs[1] != runs[2]


def test_a_temperature_of_zero_is_refused():
    with pytest.raises(ValueError, match="temperature must be above 0"):
        Sampler(0, 0.0)


@pytest.mark.parametrize("temperature", [1e-30, 1e-45, 5e-324])
def test_a_tiny_temperature_draws_the_greedy_output(temperature):
    """log p / T overflows to -inf for every token (so softmax gave NaN); the draw is the most probable token."""
    model, src = ScriptedModel(seed=2), sources(32, seed=5)
    for k in (0, 3):
        sampled = draw(model, src, Sampler(k, temperature, torch.Generator().manual_seed(0)))
        for g, s in zip(greedy_search(model, make_batch(src), 1.5, 2), sampled, strict=True):
            assert s[0].tokens == g[0].tokens and s[0].logprob == pytest.approx(g[0].logprob, abs=1e-6)


def test_a_tiny_temperature_draws_among_tied_best_tokens():
    lp = torch.tensor([[-math.inf, -0.7, -0.7, -3.0]] * 400)
    _, tokens = Sampler(0, 1e-45, torch.Generator().manual_seed(0))(lp)
    assert set(Counter(tokens.flatten().tolist())) == {1, 2}
