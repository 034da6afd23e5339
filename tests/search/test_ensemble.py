"""Ensembles: of one model the model itself, of two copies each copy, of different architectures the weighted mean
of their log-probabilities at every step of the search; members reading their inputs differently; clear errors."""
import math
import random

import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import WordVocab
from nmtkit.errors import NmtkitError
from nmtkit.inference import LoadedModel, ensemble_of
from nmtkit.models import build_model
from nmtkit.search import beam_search, greedy_search
from nmtkit.search.ensemble import Ensemble, EnsembleSources, ensemble_sources, normalised_weights
from nmtkit.search.sources import TextSource
from tests.conftest import TINY_CONFIG
from tests.models.test_transformer import TINY as TINY_TRANSFORMER

V_SRC, V_TGT = 30, 25


def member(config, seed, src=V_SRC):
    torch.manual_seed(seed)
    return build_model({**config, "param_init": 0.6} if config["arch"] != "transformer" else config,
                       CorpusMeta.text(src, V_TGT)).eval()


def sources(n=11, seed=3):
    g = random.Random(seed)
    return [[g.randrange(4, V_SRC) for _ in range(g.randrange(1, 9))] for _ in range(n)]


def same(a, b):
    """Two searches' n-best lists: the same tokens, nearly the same scores."""
    for x, y in zip(a, b, strict=True):
        assert [h.tokens for h in x] == [h.tokens for h in y]
        assert [h.score for h in x] == pytest.approx([h.score for h in y], abs=1e-4)


def sequence_logprob(model, src, tokens):
    """log p(tokens </s> | src) by teacher forcing."""
    batch = make_batch([src], [tokens])
    with torch.no_grad():
        lp = torch.log_softmax(model.score_logits(batch).float(), -1)[0]
    return float(lp.gather(1, batch.tgt_out[0].unsqueeze(1)).sum())


def test_an_ensemble_of_one_model_is_the_model():
    m, batch = member(TINY_CONFIG, 0), make_batch(sources())
    alone = Ensemble([m], [1.0], [{"src": "src"}])
    same(beam_search(m, batch, 4, 4), beam_search(alone, batch, 4, 4))
    same(greedy_search(m, batch), greedy_search(alone, batch))


def test_an_ensembles_length_limits_are_its_least_members():
    """What every member can read and write: the least of their tables (None: a member without one)."""
    learned = {**TINY_TRANSFORMER, "positions": "learned"}
    members = [member({**learned, "max_positions": n}, 0) for n in (33, 65)] + [member(TINY_CONFIG, 0)]
    assert [m.output_limit() for m in members] == [32, 64, None]
    mixed = Ensemble(members, [1 / 3] * 3, [{"src": "src"}] * 3)
    assert (mixed.input_limit(), mixed.output_limit()) == (32, 32)
    unlimited = Ensemble(members[2:] * 2, [0.5, 0.5], [{"src": "src"}] * 2)
    assert (unlimited.input_limit(), unlimited.output_limit()) == (None, None)


@pytest.mark.parametrize("config", [TINY_CONFIG, TINY_TRANSFORMER])
def test_an_ensemble_of_two_copies_is_each_copy(config):
    m, batch = member(config, 0), make_batch(sources())
    twice = Ensemble([m, member(config, 0)], normalised_weights([3, 1], 2), [{"src": "src"}] * 2)
    same(beam_search(m, batch, 5, 3), beam_search(twice, batch, 5, 3))


def test_the_search_scores_the_weighted_mean_of_the_members_log_probabilities():
    """rnnsearch and a Transformer, weighted 0.25 / 0.75: each n-best entry's log-probability is the weighted sum
    of what each member gives its tokens by teacher forcing (beam reordering of the joint state included)."""
    rnn, tfm = member(TINY_CONFIG, 1), member(TINY_TRANSFORMER, 2)
    src = sources(9, seed=5)
    both = Ensemble([rnn, tfm], [0.25, 0.75], [{"src": "src"}] * 2)
    hyps = beam_search(both, make_batch(src), 4, 4, 1.5, 3, 0.0)
    for s, n_best in zip(src, hyps):
        assert len(n_best) == 4
        for h in n_best:
            expected = 0.25 * sequence_logprob(rnn, s, h.tokens) + 0.75 * sequence_logprob(tfm, s, h.tokens)
            assert h.logprob == pytest.approx(expected, abs=1e-4)


def test_attention_comes_from_the_chosen_member():
    rnn, tfm = member(TINY_CONFIG, 1), member(TINY_TRANSFORMER, 2)
    batch = make_batch(sources(4))
    for k, alone in enumerate([rnn, tfm]):
        both = Ensemble([rnn, tfm], [0.5, 0.5], [{"src": "src"}] * 2, attention_from=k)
        with both.attention_weights(True):
            _, _, attention = both.decode_step(torch.full((4,), 2), both.encode(batch))
        with alone.attention_weights(True):
            _, _, expected = alone.decode_step(torch.full((4,), 2), alone.encode(batch))
        torch.testing.assert_close(attention["source"], expected["source"])


def vocab(words):
    return WordVocab(words)


def loaded(model, src_words, tgt_words, arch="rnnsearch"):
    return LoadedModel(model, {"src": vocab(src_words), "tgt": vocab(tgt_words)}, {"arch": arch},
                       CorpusMeta.text(len(src_words) + 4, len(tgt_words) + 4))


def test_members_that_segment_the_source_otherwise_read_it_into_their_own_stream():
    """The second model's source vocabulary differs: the same line gives it its own ids, in stream src@2, and it
    decodes from them as it would alone."""
    words = ["a", "b", "c", "d"]
    first, second = member(TINY_CONFIG, 1, src=8), member(TINY_CONFIG, 2, src=7)
    ens = ensemble_of([loaded(first, words, words), loaded(second, ["d", "c", "b"], words)], ["A.pt", "B.pt"])
    assert ens.model.streams == [{"src": "src"}, {"src": "src@2"}]
    read = [TextSource(ens.vocabs["src"]), TextSource(vocab(["d", "c", "b"]))]
    made = ensemble_sources(read, ens.model)
    assert isinstance(made, EnsembleSources)
    inputs = made.read(0, b"a d b\n")
    assert inputs == {"src": [4, 7, 5], "src@2": [1, 4, 6]}  # "a" is unknown (1) to the second model
    assert made.labels(inputs) == {"src": ["a", "d", "b", "</s>"]}
    batch = make_batch({name: [ids] for name, ids in inputs.items()})
    with torch.no_grad():
        lp, _, _ = ens.model.decode_step(torch.full((1,), 2), ens.model.encode(batch))
        lp1, _, _ = first.decode_step(torch.full((1,), 2), first.encode(make_batch([[4, 7, 5]])))
        lp2, _, _ = second.decode_step(torch.full((1,), 2), second.encode(make_batch([[1, 4, 6]])))
    torch.testing.assert_close(lp, 0.5 * lp1 + 0.5 * lp2)


def test_members_that_read_alike_share_the_first_members_stream():
    words = ["a", "b"]
    ens = ensemble_of([loaded(member(TINY_CONFIG, 1, src=6), words, words)] * 2, ["A.pt", "A.pt"])
    assert ens.model.streams == [{"src": "src"}, {"src": "src"}]
    source = TextSource(ens.vocabs["src"])
    assert ensemble_sources([source, TextSource(ens.vocabs["src"])], ens.model).sources == {"src": source}


def test_an_ensemble_needs_one_target_vocabulary_and_the_same_inputs():
    m = member(TINY_CONFIG, 1, src=6)
    with pytest.raises(NmtkitError, match="B.pt: its target vocabulary differs from that of A.pt"):
        ensemble_of([loaded(m, ["a", "b"], ["x", "y"]), loaded(m, ["a", "b"], ["x", "z"])], ["A.pt", "B.pt"])
    other = loaded(m, ["a", "b"], ["x", "y"])
    other.model = type("TwoInputs", (), {"inputs": ("src", "mt")})()
    with pytest.raises(NmtkitError, match="B.pt: a rnnsearch model reading src, mt"):
        ensemble_of([loaded(m, ["a", "b"], ["x", "y"]), other], ["A.pt", "B.pt"])


@pytest.mark.parametrize("weights, message", [([1], "1 weight"), ([], "0 weight"), ([1, -1], "got -1 in"),
                                              ([0, 1], "got 0 in"), ([math.nan, 1], "got nan in"),
                                              ([1, math.inf], "got inf in"), ([-math.inf, 1], "got -inf in")])
def test_weights_are_checked(weights, message):
    with pytest.raises(NmtkitError, match=f"^--weights: .*{message}"):
        normalised_weights(weights, 2)
    assert normalised_weights([1, 3], 2) == [0.25, 0.75] and normalised_weights(None, 4) == [0.25] * 4


def test_weights_are_normalised_without_overflow():
    assert normalised_weights([1e308, 1e308], 2) == normalised_weights([1, 1], 2) == [0.5, 0.5]
    assert normalised_weights([0.5e308, 1.5e308], 2) == [0.25, 0.75]
    assert normalised_weights([5e-324, 5e-324, 1e-323], 3) == [0.25, 0.25, 0.5]
