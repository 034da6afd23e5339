"""Greedy search against a scripted model whose log-probabilities are known exactly."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.vocab import EOS
from nmtkit.search import greedy_search
from tests.search.host_reads import HostReads, LateEnd
from tests.search.scripted import ScriptedModel, limit, source_attention, sources


def argmax_path(model, sentence, max_len):
    """The most probable token at each step, ``</s>`` forced after ``max_len`` tokens (without it)."""
    tokens = []
    while True:
        lp = model.log_probs(sentence, tuple(tokens))
        word = EOS if len(tokens) == max_len else max(range(len(lp)), key=lp.__getitem__)
        if word == EOS:
            return tokens
        tokens.append(word)


@pytest.mark.parametrize("a, b", [(1.5, 2), (0.5, 1)])
def test_greedy_is_the_argmax_path(a, b):
    """Tokens, log-probability, score and attention of the argmax path, within the length limit."""
    model, src = ScriptedModel(), sources(32)
    hyps = greedy_search(model, make_batch(src), a, b, attention=True)
    width = max(map(len, src)) + 1
    for i, (s, h) in enumerate(zip(src, hyps)):
        assert len(h) == 1
        assert h[0].tokens == argmax_path(model, i, limit(s, a, b))
        assert h[0].logprob == pytest.approx(model.score(i, h[0].tokens), abs=1e-4)
        assert h[0].score == pytest.approx(h[0].logprob / (len(h[0].tokens) + 1))  # (length penalty 1, </s> counted)
        assert torch.equal(torch.from_numpy(h[0].attention["source"]), source_attention(s, h[0].tokens, width))


def test_length_limit_is_reached_and_respected():
    """With a tight limit some outputs are cut there, and none is longer."""
    model, src = ScriptedModel(), sources(32)
    lengths = [len(h[0].tokens) for h in greedy_search(model, make_batch(src), 0.5, 1)]
    limits = [limit(s, 0.5, 1) for s in src]
    assert all(n <= m for n, m in zip(lengths, limits))
    assert any(n == m for n, m in zip(lengths, limits))


def test_a_step_reads_the_device_once_until_sentences_end():
    """Before the length limit, each step reads one flag (whether a sentence ended); the step at the limit reads
    more, to collect the outputs."""
    reads = HostReads("nmtkit/search/greedy.py")
    with reads:
        hyps = greedy_search(LateEnd(reads), make_batch([[4, 5, 6, 7]] * 6), 1.5, 2)
    assert all(len(h[0].tokens) == limit([4, 5, 6, 7], 1.5, 2) for h in hyps)
    assert len(reads.steps) == limit([4, 5, 6, 7], 1.5, 2) + 1
    assert reads.steps[:-1] == [1] * (len(reads.steps) - 1)
    assert reads.steps[-1] > 1
