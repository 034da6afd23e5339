import pytest
import torch

from nmtkit.device import pick_device
from nmtkit.errors import NmtkitError


def test_the_cpu_and_auto_are_always_there():
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device("auto").type in ("cpu", "cuda")


@pytest.mark.parametrize("name,available,message", [
    ("cuda", torch.cuda.is_available(), "--device cuda: no CUDA device is available"),
    ("cuda:1", torch.cuda.device_count() > 1, "--device cuda:1: "),
    ("mps", torch.backends.mps.is_available(), "--device mps: no MPS device is available"),
])
def test_a_device_this_machine_lacks_is_a_one_line_error(name, available, message):
    if available:
        pytest.skip(f"this machine has {name}")
    with pytest.raises(NmtkitError, match=message):
        pick_device(name)
