"""``train --profile A:B`` profiles exactly those updates and writes what they spent their time on; bad ranges are
refused in one line."""
import json
from types import SimpleNamespace

import pytest
import torch
from torch.autograd import DeviceType

from nmtkit.train.profiling import per_update, profiled_updates
from tests.conftest import TINY_MODEL, run


def _train(corpus_dir, save, *extra, ok=True):
    return run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 6, "--valid-every", 6,
                "--valid-max-sentences", 5, "--batch-size", 16, "--log-every", 3, *extra], ok=ok)


def test_the_profiled_updates_are_written_as_a_table_and_a_trace(corpus_dir, tmp_path):
    _train(corpus_dir, tmp_path / "run", "--profile", "2:4")
    text = (tmp_path / "run" / "profile.txt").read_text()
    assert text.startswith("updates 2-4 profiled on cpu: per update "), text
    assert "kernel launches" in text and "aten::" in text  # the operations' table
    trace = json.loads((tmp_path / "run" / "profile.json").read_text())
    steps = {e["name"] for e in trace["traceEvents"] if e.get("name", "").startswith("aten::")}
    assert "aten::mm" in steps or "aten::addmm" in steps


def test_a_profile_past_the_last_update_is_written_when_training_stops(corpus_dir, tmp_path):
    _train(corpus_dir, tmp_path / "run", "--profile", "5:100")
    assert (tmp_path / "run" / "profile.txt").read_text().startswith("updates 5-6 profiled on cpu: ")


def test_a_new_run_does_not_profile_over_the_users_profile(corpus_dir, tmp_path):
    """(the user's profile.txt was overwritten in place, a link profile.json replaced by a file)"""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "profile.txt").write_text("mine\n")
    r = _train(corpus_dir, tmp_path / "run", "--profile", "2:4", ok=False)
    assert r.exit_code == 2 and r.stderr.strip() == (f"error: --save-dir {tmp_path / 'run'}: holds profile.txt, "
                                                     "which --profile would replace; remove them or choose another "
                                                     "folder")
    assert (tmp_path / "run" / "profile.txt").read_text() == "mine\n" and not (tmp_path / "run" / "last.pt").exists()
    _train(corpus_dir, tmp_path / "run")  # (not profiling: the file is not in its way)
    assert (tmp_path / "run" / "profile.txt").read_text() == "mine\n"


def test_a_trace_that_fails_halfway_is_not_left_under_its_name(corpus_dir, tmp_path, monkeypatch):
    def half(self, path):
        with open(path, "w") as f:
            f.write('{"traceEvents": [')
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", half)
    r = _train(corpus_dir, tmp_path / "run", "--profile", "2:4", ok=False)
    assert r.stderr.strip().endswith("error: no space left on device while writing "
                                     f"{tmp_path / 'run' / 'profile.json'}")
    assert not (tmp_path / "run" / "profile.json").exists()


def test_no_profile_unless_asked(corpus_dir, tmp_path):
    _train(corpus_dir, tmp_path / "run")
    assert not (tmp_path / "run" / "profile.txt").exists()


def test_a_range_of_one_update_and_one_that_ends_at_the_last_are_profiled():
    assert profiled_updates("3:3", 6) == range(3, 4) and profiled_updates("6:6", 6) == range(6, 7)
    assert profiled_updates("2:9", 6) == range(2, 10) and profiled_updates("", 6) is None


@pytest.mark.parametrize("value, says", [("4:2", "--profile 4:2: the last update comes before the first"),
                                         ("2-4", "A:B, the first and the last update"),
                                         ("0:2", "A:B, the first and the last update"),
                                         ("7:9", "--profile 7:9: past --max-steps 6, so nothing would be profiled")])
def test_a_bad_range_is_refused_in_one_line(corpus_dir, tmp_path, value, says):
    r = _train(corpus_dir, tmp_path / "run", "--profile", value, ok=False)
    assert r.exit_code == 2 and says in r.stderr and r.stderr.startswith("error:"), r.stderr  # (before any work)
    assert not (tmp_path / "run" / "profile.txt").exists()


def test_the_summary_counts_device_time_once_and_names_launches_and_syncs():
    # a host operation carries the time of the kernels it launched; only the device's own events count
    event = lambda key, count, device, us: SimpleNamespace(key=key, count=count, device_type=device,
                                                           self_device_time_total=us, is_user_annotation=False)
    events = [event("aten::mm", 4, DeviceType.CPU, 3000.0), event("sm90_gemm_kernel", 4, DeviceType.CUDA, 3000.0),
              event("cudaLaunchKernel", 6, DeviceType.CPU, 0.0), event("cuLaunchKernelEx", 2, DeviceType.CPU, 0.0),
              event("cudaStreamSynchronize", 2, DeviceType.CPU, 0.0)]
    assert per_update(events, [0.01, 0.03], torch.device("cuda"), 7) == (
        "updates 7-8 profiled on cuda: per update 20.00 ms wall, 1.50 ms of device kernels, 4 kernel launches, "
        "1.0 host synchronisations")
