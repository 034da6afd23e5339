"""Perplexity (Eq. 13) and the corpus negative log-likelihood it is computed from."""
import math
import random

import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.text import read_lines
from nmtkit.inference import load_model
from nmtkit.metrics.perplexity import corpus_nll, perplexity
from nmtkit.models import build_model
from tests.conftest import run

CPU = torch.device("cpu")


def tiny_model():
    """An untrained rnnsearch with dropout, so that train mode would change the scores."""
    torch.manual_seed(0)
    config = {"arch": "rnnsearch", "emb_size": 8, "enc_size": 8, "dec_size": 8, "dropout": 0.3}
    return build_model(config, CorpusMeta.text(20, 20))


def pairs(n=9, seed=0):
    """Source and target id lists of 1 to 6 words; one target is empty."""
    g = random.Random(seed)
    words = lambda k: [g.randrange(4, 20) for _ in range(k)]
    return [(words(g.randrange(1, 7)), words(g.randrange(0 if i == 0 else 1, 7))) for i in range(n)]


def batches(data, size):
    return [make_batch([s for s, _ in data[i:i + size]], [t for _, t in data[i:i + size]])
            for i in range(0, len(data), size)]


def test_perplexity_is_exp_of_the_mean_nll():
    assert perplexity(20.0, 10) == pytest.approx(math.exp(2.0))
    assert perplexity(0.0, 5) == 1.0


def test_perplexity_overflow_is_inf_and_zero_tokens_do_not_divide_by_zero():
    assert perplexity(1e6, 10) == math.inf
    assert perplexity(699.0, 1) == pytest.approx(math.exp(699.0))
    assert perplexity(0.0, 0) == 1.0


def test_corpus_nll_sums_minus_log_p_of_every_target_token_in_eval_mode():
    """The sum of -log p(y_t) over the sentences (</s> counted), computed as the model is evaluated."""
    model, data = tiny_model(), pairs()
    model.eval()
    expected = 0.0
    with torch.no_grad():
        for s, t in data:
            b = make_batch([s], [t])
            lp = torch.log_softmax(model(b).logits.float(), -1)[0].gather(1, b.tgt_out[0].unsqueeze(1))
            expected -= float(lp.sum())
    model.train()
    nll, tokens = corpus_nll(model, batches(data, 4), CPU)
    assert model.training
    assert tokens == sum(len(t) + 1 for _, t in data)
    assert nll == pytest.approx(expected, abs=1e-4)


def test_corpus_nll_keeps_eval_mode_and_does_not_depend_on_batching():
    model, data = tiny_model().eval(), pairs(11, seed=1)
    results = [corpus_nll(model, batches(data, size), CPU) for size in (1, 3, 11)]
    assert not model.training
    for nll, tokens in results[1:]:
        assert tokens == results[0][1]
        assert nll == pytest.approx(results[0][0], abs=1e-4)


REVERSE_SIZES = {"rtatt-rnn": ["--emb-size", 16, "--enc-size", 16, "--dec-size", 24],
                 "bitatt-rnn": ["--emb-size", 16, "--enc-size", 16, "--dec-size", 24],
                 "bitatt-transformer": ["--d-model", 16, "--ffn-size", 32, "--heads", 2, "--enc-layers", 1,
                                        "--dec-layers", 1, "--attention-dropout", 0.0]}


@pytest.mark.parametrize("arch", list(REVERSE_SIZES))
def test_the_perplexity_of_a_reference_context_model_conditions_as_decoding_does(arch, corpus_dir, text_dir, tmp_path):
    """score --metric ppl of a model trained with --reverse-context reference is Eq. 13 over ``score_logits``, whose
    R̃ / R_dec comes from the greedy reverse pass as in two-pass decoding (§3.3), not over ``forward``'s logits,
    whose R̃ (Eq. 19) / R_dec (Eq. 24) the reverse decoder computes from the reference itself."""
    run(["train", "--data", corpus_dir, "--save-dir", tmp_path, "--arch", arch, *REVERSE_SIZES[arch], "--dropout", 0.0,
         "--reverse-context", "reference", "--max-steps", 30, "--valid-every", 30, "--valid-max-sentences", 4,
         "--lr", 0.01, "--batch-size", 32, "--threads", 2, "--device", "cpu"])
    src, ref = text_dir / "test.en", text_dir / "test.de"
    scored = float(run(["score", "--metric", "ppl", "-m", tmp_path / "last.pt", "--src", src, "-r", ref,
                        "--score-only"]).stdout)
    loaded = load_model(tmp_path / "last.pt")
    m = loaded.model
    b = make_batch([loaded.vocabs["src"].encode(line) for line in read_lines(src)],
                   [loaded.tgt_vocab.encode(line) for line in read_lines(ref)])
    real = b.tgt_out != 0

    def ppl(logits):
        lp = torch.log_softmax(logits.double(), -1).gather(-1, b.tgt_out.unsqueeze(-1)).squeeze(-1)
        return math.exp(-float(lp[real].sum()) / int(real.sum()))

    with torch.no_grad():
        by_decoding, by_reference = ppl(m.score_logits(b)), ppl(m(b).logits)
    assert scored == pytest.approx(by_decoding, abs=1e-4)  # printed with 4 decimals
    assert abs(scored - by_reference) > 1e-3 * scored, (scored, by_reference)  # 0.3 % to 4 % here
