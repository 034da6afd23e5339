"""``train --amp`` on CPUs: bfloat16 autocast where the CPU computes in bfloat16 natively (every architecture
trains, luong's LSTM included, which oneDNN has no bfloat16 kernel for); elsewhere float32 with a one-line
warning, instead of emulated bfloat16 that is slower than float32."""
from __future__ import annotations

import pytest
import torch

from nmtkit.device import autocast_dtype, native_bfloat16
from tests.conftest import TINY_MODEL, run

STEPS = ["--max-steps", 2, "--valid-every", 2, "--valid-max-sentences", 2, "--amp"]
LUONG = ["--arch", "luong", "--emb-size", 16, "--enc-size", 16, "--dec-size", 16]


def test_without_native_bfloat16_amp_trains_in_float32_with_a_warning(corpus_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("nmtkit.device.native_bfloat16", lambda: False)
    seen = []
    monkeypatch.setattr(torch, "autocast", lambda *a, **k: seen.append(k) or torch.amp.autocast(*a, **k))
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "run", *LUONG, *STEPS])
    assert r.stderr.count("warning: --amp: this CPU has no native bfloat16 arithmetic") == 1
    assert seen and not any(k.get("enabled") for k in seen)


@pytest.mark.parametrize("arch", [LUONG, TINY_MODEL], ids=["luong", "rnnsearch"])
def test_with_native_bfloat16_amp_trains_in_bfloat16(corpus_dir, tmp_path, monkeypatch, arch):
    monkeypatch.setattr("nmtkit.device.native_bfloat16", lambda: True)  # emulated here when not native
    seen = []
    monkeypatch.setattr(torch, "autocast", lambda *a, **k: seen.append(k) or torch.amp.autocast(*a, **k))
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "run", *arch, *STEPS])
    assert "validation at step 2" in r.stderr and "warning" not in r.stderr
    assert any(k.get("enabled") and k.get("dtype") == torch.bfloat16 for k in seen)


def test_native_bfloat16_is_read_from_the_cpu_capabilities(monkeypatch):
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"avx2": True, "avx512_bf16": False})
    assert not native_bfloat16() and autocast_dtype(torch.device("cpu")) is None
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"avx2": True, "amx_bf16": True})
    assert native_bfloat16() and autocast_dtype(torch.device("cpu")) == torch.bfloat16
    assert autocast_dtype(torch.device("mps")) == torch.bfloat16  # CUDA: tests/test_device.py (by capability)
