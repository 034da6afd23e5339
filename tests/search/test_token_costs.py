"""Token costs: each step's log-probabilities less each token's cost; the ids an edit form leaves free."""
import torch

from nmtkit.data.output_form import TEXT, OutputForm
from nmtkit.data.vocab import EOS, WordVocab
from nmtkit.search.token_costs import TokenCosts, edit_costs
from tests.models.decoding import step_by_step
from tests.models.test_contract import batch, tiny


def test_each_step_scores_the_log_probabilities_less_the_costs():
    m, b = tiny("rnnsearch"), batch()
    costs = torch.rand(m.decoder.readout.output.out_features)
    want, want_weights = step_by_step(m, b)
    got, got_weights = step_by_step(TokenCosts(m, costs), b)
    torch.testing.assert_close(got, want - costs, atol=1e-6, rtol=0)
    assert all(torch.equal(g["source"], w["source"]) for g, w in zip(got_weights, want_weights))


def test_edit_operations_cost_all_but_keeping_and_ending():
    vocab = WordVocab(["<keep>", "<delete>", "Haus"])
    keep = vocab.encode("<keep>")[0]
    assert OutputForm("mt").unchanged_ids(vocab) == [keep, EOS] and TEXT.unchanged_ids(vocab) == []
    assert OutputForm("mt").unchanged_ids(WordVocab(["Haus"])) == [EOS]  # a vocabulary without <keep>
    costs = edit_costs(len(vocab), [keep, EOS], 2.5)
    assert costs[keep] == costs[EOS] == 0 and (costs[[i for i in range(len(vocab)) if i not in (keep, EOS)]] == 2.5).all()
