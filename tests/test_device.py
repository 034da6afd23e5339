import os

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


@pytest.mark.parametrize("capability,dtype", [((9, 0), torch.bfloat16), ((8, 0), torch.bfloat16),
                                              ((7, 5), torch.float16), ((7, 0), torch.float16)])
def test_mixed_precision_on_a_gpu_is_bfloat16_where_it_is_native(monkeypatch, capability, dtype):
    from nmtkit.device import autocast_dtype

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # emulated counts there: not enough
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    assert autocast_dtype(torch.device("cuda")) == dtype  # float16 (loss scaled) before Ampere


def test_a_gpu_is_prepared_with_tf32_expandable_segments_and_no_cudnn_attention(monkeypatch, request):
    from nmtkit.device import prepare

    was = torch.backends.cuda.cudnn_sdp_enabled()
    request.addfinalizer(lambda: torch.backends.cuda.enable_cudnn_sdp(was))
    torch.backends.cuda.enable_cudnn_sdp(True)

    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "")  # recorded, so that the test's setting is undone
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    prepare(torch.device("cpu"))  # nothing for the CPU
    assert not torch.backends.cuda.matmul.allow_tf32 and "PYTORCH_CUDA_ALLOC_CONF" not in os.environ
    assert torch.backends.cuda.cudnn_sdp_enabled()
    prepare(torch.device("cuda"))
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    assert not torch.backends.cuda.cudnn_sdp_enabled()  # (cuDNN's attention plans a kernel per new batch shape)
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128")  # the user's own setting stays
    prepare(torch.device("cuda"))
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:128"


@pytest.mark.parametrize("name,fused", [("adam", True), ("sgd", True), ("adadelta", None)])
def test_optimisers_run_fused_on_a_gpu(name, fused):
    from nmtkit.train.optim import make_optimizer

    params = [torch.nn.Parameter(torch.zeros(3))]
    on_gpu = make_optimizer(name, params, 0.1, device=torch.device("cuda"))
    assert on_gpu.defaults.get("fused") == fused
    assert not make_optimizer(name, params, 0.1, device=torch.device("cpu")).defaults.get("fused")


def test_peak_gpu_memory_is_read_on_gpus_only():
    from nmtkit.device import peak_memory_gb

    assert peak_memory_gb(torch.device("cpu")) is None


def test_a_state_saved_unfused_resumes_fused_with_its_step_counts_beside_the_parameters():
    from nmtkit.train.optim import load_state_keeping_settings, make_optimizer

    p = torch.nn.Parameter(torch.ones(3))
    plain = make_optimizer("adam", [p], 0.1)
    p.grad = torch.ones(3)
    plain.step()
    fused = make_optimizer("adam", [p], 0.1, device=torch.device("cuda"))  # CPU parameters: fused on the CPU here
    load_state_keeping_settings(fused, plain.state_dict())
    step = fused.state[p]["step"]
    assert fused.param_groups[0]["fused"] and step.dtype == torch.float32 and step.device == p.device
    fused.step()
    assert float(fused.state[p]["step"]) == 2


def test_a_gpu_index_past_the_machine_s_is_a_one_line_error(monkeypatch):
    from nmtkit.device import check_available

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    check_available(torch.device("cuda", 0), "cuda:0")
    with pytest.raises(NmtkitError, match=r"^--device cuda:1: there are only 1 CUDA devices$"):
        check_available(torch.device("cuda", 1), "cuda:1")


def test_running_out_of_host_memory_is_recognised_as_running_out_of_memory():
    from nmtkit.device import is_out_of_memory

    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes"))
    assert is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not is_out_of_memory(RuntimeError("shape '[2, 3]' is invalid for input of size 5"))
