import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from nmtkit.train.checkpoint import load_checkpoint, save_checkpoint, warm_start
from tests.conftest import TINY_CONFIG


def test_round_trip_and_weights_only(tmp_path):
    save_checkpoint(tmp_path / "c.pt", {"model": {"w": torch.ones(2)}, "config": {"arch": "x"}})
    ckpt = load_checkpoint(tmp_path / "c.pt")
    assert torch.equal(ckpt["model"]["w"], torch.ones(2)) and ckpt["format"] == 1


def test_a_failed_save_keeps_the_previous_checkpoint(tmp_path):
    save_checkpoint(tmp_path / "c.pt", {"model": {"w": torch.ones(2)}})

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("cannot save")

    with pytest.raises(RuntimeError):
        save_checkpoint(tmp_path / "c.pt", {"model": {"w": Unpicklable()}})
    assert torch.equal(load_checkpoint(tmp_path / "c.pt")["model"]["w"], torch.ones(2))
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def test_broken_or_foreign_files_are_clear_errors(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(NmtkitError, match="junk.pt: not a readable nmtkit checkpoint"):
        load_checkpoint(tmp_path / "junk.pt")
    torch.save({"something": 1}, tmp_path / "other.pt")
    with pytest.raises(NmtkitError, match="not an nmtkit checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(NmtkitError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "missing.pt")


def test_warm_start_copies_matching_parameters_and_lists_new_ones():
    small = build_model(TINY_CONFIG, 20, 20)
    bigger = build_model({**TINY_CONFIG, "readout_size": 8}, 20, 20)
    new, unused, zeroed = warm_start(bigger, {"model": small.state_dict()})
    assert zeroed == []
    assert new == ["decoder.output.weight", "decoder.readout.bias", "decoder.readout.weight"]
    assert unused == new
    assert torch.equal(bigger.state_dict()["decoder.attention.v.weight"], small.state_dict()["decoder.attention.v.weight"])


@pytest.mark.parametrize("arch", ["target-attn", "rtatt-rnn", "bitatt-rnn"])
def test_warm_started_target_attention_first_computes_what_rnnsearch_did(arch):
    """The new maps into the decoder's gates and output start at zero: the same logits as the checkpoint."""
    torch.manual_seed(0)
    rnnsearch = build_model(TINY_CONFIG, 20, 20).eval()
    model = build_model({**TINY_CONFIG, "arch": arch}, 20, 20).eval()
    new, _, zeroed = warm_start(model, {"model": rnnsearch.state_dict()})
    assert "decoder.target_gates.weight" in zeroed or "decoder.extra_gates.weight" in zeroed
    assert all(k in new for k in zeroed) and "decoder.target_attention.v.weight" not in zeroed
    b = make_batch([[5, 6, 7], [8, 9]], [[4, 5, 6, 7], [9]])
    with torch.no_grad():
        assert torch.allclose(model(b)[0], rnnsearch(b)[0], atol=1e-6)


def test_warm_start_zeroes_new_bridges_only_and_takes_parameters_outside_modules():
    class Gated(torch.nn.Module):
        bridges = ("gate",)

        def __init__(self):
            super().__init__()
            self.sentinel = torch.nn.Parameter(torch.ones(3))
            self.gate = torch.nn.Linear(3, 3)
            self.other = torch.nn.Linear(3, 3)

    model = Gated()
    new, unused, zeroed = warm_start(model, {"model": {"other.weight": torch.ones(3, 3)}})
    assert new == ["gate.bias", "gate.weight", "other.bias", "sentinel"] and unused == []
    assert zeroed == ["gate.bias", "gate.weight"] and not model.gate.weight.any() and model.sentinel.all()
