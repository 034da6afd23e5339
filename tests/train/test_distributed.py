"""Which device each process of a torchrun run trains on (tests/train/test_trainer.py runs two gloo processes)."""
import pytest
import torch

from nmtkit.errors import NmtkitError
from nmtkit.train.distributed import DistInfo, process_device


def test_each_process_trains_on_its_local_rank_s_gpu_and_more_processes_than_gpus_are_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert process_device(torch.device("cuda"), "auto", DistInfo(3, 4, 1)) == torch.device("cuda", 1)
    with pytest.raises(NmtkitError, match=r"^rank 2 of 4: torchrun started more processes on this machine than it "
                                          r"has CUDA devices \(2\); give --nproc-per-node 2 or fewer$"):
        process_device(torch.device("cuda"), "auto", DistInfo(2, 4, 2))
    assert process_device(torch.device("cuda", 1), "cuda:1", DistInfo()) == torch.device("cuda", 1)  # (one process)


def test_processes_on_cpus_because_no_gpu_was_found_are_warned_of_once(capsys):
    cpu = torch.device("cpu")
    assert process_device(cpu, "auto", DistInfo(0, 2, 0)) == cpu
    assert capsys.readouterr().err == ("warning: --device auto: no GPU found, so the run's 2 processes train on CPUs "
                                       "(give --device cpu to say that this is meant)\n")
    for name, info in (("auto", DistInfo(1, 2, 1)), ("cpu", DistInfo(0, 2, 0)), ("auto", DistInfo())):
        assert process_device(cpu, name, info) == cpu
    assert capsys.readouterr().err == ""
