"""train --diagnostics: gradient norms by parameter group, and the model's statistics, into train.jsonl."""
import json
import math

import torch
from torch import nn

from nmtkit.train.diagnostics import gradient_norms


def test_gradient_norms_sum_the_squares_of_each_group_under_its_path():
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 1), nn.Linear(1, 1)))
    for p in model.parameters():
        p.grad = torch.full_like(p, 2.0)
    model[1][1].weight.grad = None  # a parameter without a gradient counts nothing
    got = gradient_norms(model, {"first": "0", "inner": "1", "last": "1.1", "bias": "1.1.bias", "none": "2"})
    assert got == {"first": round(math.sqrt(4 * 9), 6), "inner": round(math.sqrt(4 * 5), 6), "last": 2.0,
                   "bias": 2.0}


def test_a_multi_source_run_logs_gradients_and_attention_every_log_step(tmp_path):
    from tests.data.test_multimodal import trained_multimodal

    root = trained_multimodal(tmp_path, "--combination", "flat", "--sentinel", "--diagnostics", "--log-every", 2,
                              "--max-steps", 4, "--valid-every", 4, "--clip-norm", "0.001")
    records = [json.loads(line) for line in (root / "run" / "train.jsonl").read_text().splitlines()]
    logged = [r for r in records if r["type"] == "train"]
    assert [r["step"] for r in logged] == [2, 4] and all("diagnostics" in r for r in logged)
    d = logged[-1]["diagnostics"]
    for name in ("src", "image"):
        assert d[f"grad.encoder.{name}"] > 0 and d[f"grad.energy.{name}"] > 0 and d[f"grad.value.{name}"] > 0
        assert d[f"context.{name}"] > 0 and d[f"states.{name}"] > 0
    assert d["grad.sentinel_gate"] > 0 and d["grad.cell"] > 0
    assert d["grad.readout"] > 1e-3  # before clipping (to a total norm of 0.001)
    assert abs(d["mass.src"] + d["mass.image"] + d["mass.sentinel"] - 1) < 1e-5
