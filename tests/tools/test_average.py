import pytest
import torch

from nmtkit.checkpoint import load_checkpoint, save_checkpoint
from nmtkit.errors import NmtkitError
from nmtkit.tools.average import average_checkpoints


def test_the_average_is_the_mean_of_the_parameters(trained_ckpt, tmp_path):
    a = load_checkpoint(trained_ckpt, ("model", "config", "vocab", "corpus"))
    b = dict(a, model={k: v * 3 if v.is_floating_point() else v for k, v in a["model"].items()})
    save_checkpoint(tmp_path / "b.pt", b)
    avg = average_checkpoints([trained_ckpt, tmp_path / "b.pt"])
    for k, v in a["model"].items():
        assert torch.allclose(avg["model"][k], 2 * v, atol=1e-6), k
    assert avg["vocab"] == b["vocab"] and "optimizer" not in avg
    one = average_checkpoints([trained_ckpt])
    assert all(torch.equal(one["model"][k], v) for k, v in a["model"].items())


def test_checkpoints_of_other_shapes_are_refused(trained_ckpt, tmp_path):
    a = load_checkpoint(trained_ckpt)
    name = next(iter(a["model"]))
    save_checkpoint(tmp_path / "b.pt", dict(a, model={**a["model"], name: torch.zeros(3)}))
    with pytest.raises(NmtkitError, match=f"b.pt: its parameters do not match those of .*best.pt: {name}"):
        average_checkpoints([tmp_path / "b.pt", trained_ckpt])


@pytest.mark.parametrize("position", [0, 1])
def test_a_checkpoint_with_a_parameter_that_is_not_finite_is_refused(trained_ckpt, tmp_path, position):
    a = load_checkpoint(trained_ckpt)
    name = list(a["model"])[2]
    broken = {**a["model"], name: a["model"][name].clone().index_fill_(0, torch.tensor([0]), float("nan"))}
    save_checkpoint(tmp_path / "nan.pt", dict(a, model=broken))
    paths = [trained_ckpt, trained_ckpt]
    paths[position] = tmp_path / "nan.pt"
    with pytest.raises(NmtkitError, match=f"nan.pt: parameter {name} is not finite"):
        average_checkpoints(paths)
