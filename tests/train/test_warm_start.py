"""Warm start: matching parameters copied, new ones listed, new bridges zeroed."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.models import build_model
from nmtkit.train.warm_start import warm_start
from tests.conftest import TINY_CONFIG


def test_warm_start_copies_matching_parameters_and_lists_new_ones():
    small = build_model(TINY_CONFIG, CorpusMeta.text(20, 20))
    bigger = build_model({**TINY_CONFIG, "readout_size": 8}, CorpusMeta.text(20, 20))
    new, unused, zeroed, _ = warm_start(bigger, {"model": small.state_dict()})
    assert zeroed == []
    assert new == ["decoder.readout.base.bias", "decoder.readout.base.weight", "decoder.readout.output.weight"]
    assert unused == new
    assert torch.equal(bigger.state_dict()["decoder.attention.v.weight"], small.state_dict()["decoder.attention.v.weight"])


def test_a_tied_tensor_takes_the_checkpoint_s_first_value_and_its_others_are_reported():
    """(an untied checkpoint's output layer overwrote its target embeddings in a tied model, silently; and a tied
    output layer loaded through its embedding was listed as new)"""
    torch.manual_seed(0)
    untied = build_model({**TINY_CONFIG, "readout_size": 16}, CorpusMeta.text(20, 20))
    tied = build_model({**TINY_CONFIG, "readout_size": 16, "tie_embeddings": True}, CorpusMeta.text(20, 20))
    given = untied.state_dict()
    assert not torch.equal(given["tgt_emb.weight"], given["decoder.readout.output.weight"])
    new, unused, _, shared = warm_start(tied, {"model": given})
    assert torch.equal(tied.tgt_emb.weight, given["tgt_emb.weight"]) and tied.decoder.readout.output.weight is \
        tied.tgt_emb.weight
    assert shared == [["tgt_emb.weight", "decoder.readout.output.weight"]] and new == []
    assert unused == ["decoder.readout.output.weight"]
    alone = {k: v for k, v in given.items() if k != "decoder.readout.output.weight"}  # (its embedding alone)
    assert warm_start(tied, {"model": alone}) == ([], [], [], [])
    same = {**given, "decoder.readout.output.weight": given["tgt_emb.weight"]}  # (a tied checkpoint: one value)
    assert warm_start(tied, {"model": same}) == ([], [], [], [])


@pytest.mark.parametrize("arch", ["target-attn", "rtatt-rnn", "bitatt-rnn"])
def test_warm_started_target_attention_first_computes_what_rnnsearch_did(arch):
    """The new maps into the decoder's gates and output start at zero: the same logits as the checkpoint."""
    torch.manual_seed(0)
    rnnsearch = build_model(TINY_CONFIG, CorpusMeta.text(20, 20)).eval()
    model = build_model({**TINY_CONFIG, "arch": arch}, CorpusMeta.text(20, 20)).eval()
    new, _, zeroed, _ = warm_start(model, {"model": rnnsearch.state_dict()})
    assert "decoder.cell.contexts.target.weight" in zeroed or "decoder.cell.inputs.extra.weight" in zeroed
    assert all(k in new for k in zeroed) and "decoder.target_attention.v.weight" not in zeroed
    b = make_batch([[5, 6, 7], [8, 9]], [[4, 5, 6, 7], [9]])
    with torch.no_grad():
        assert torch.allclose(model(b).logits, rnnsearch(b).logits, atol=1e-6)


def test_warm_start_zeroes_new_bridges_only_and_takes_parameters_outside_modules():
    class Gated(torch.nn.Module):
        bridges = ("gate",)

        def __init__(self):
            super().__init__()
            self.sentinel = torch.nn.Parameter(torch.ones(3))
            self.gate = torch.nn.Linear(3, 3)
            self.other = torch.nn.Linear(3, 3)
            self.subgate = torch.nn.Linear(3, 3)  # a name that merely ends like a bridge's: not one

    model = Gated()
    new, unused, zeroed, _ = warm_start(model, {"model": {"other.weight": torch.ones(3, 3)}})
    assert new == ["gate.bias", "gate.weight", "other.bias", "sentinel", "subgate.bias", "subgate.weight"]
    assert unused == [] and zeroed == ["gate.bias", "gate.weight"]
    assert not model.gate.weight.any() and model.sentinel.all() and model.subgate.weight.all()
