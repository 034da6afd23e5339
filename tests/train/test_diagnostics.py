"""train --diagnostics: gradient norms by parameter group, and the model's statistics, into train.jsonl."""
import json
import math

import pytest
import torch
from torch import nn

from nmtkit.train.diagnostics import gradient_norms, group_pattern


def test_gradient_norms_sum_the_squares_of_each_group_under_its_path():
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 1), nn.Linear(1, 1)))
    for p in model.parameters():
        p.grad = torch.full_like(p, 2.0)
    model[1][1].weight.grad = None  # a parameter without a gradient counts nothing
    got = gradient_norms(model, {"first": "0", "inner": "1", "last": "1.1", "bias": "1.1.bias", "none": "2"})
    assert got == {"first": round(math.sqrt(4 * 9), 6), "inner": round(math.sqrt(4 * 5), 6), "last": 2.0,
                   "bias": 2.0}
    # * for any one module name (the top-level Linear's weight; the biases of the inner ones), a group of two paths
    got = gradient_norms(model, {"weights": "*.weight", "either": ("0", "1.0"), "nested": "1.*.bias"})
    assert got == {"weights": round(math.sqrt(4 * 6), 6), "either": round(math.sqrt(4 * 13), 6),
                   "nested": round(math.sqrt(4 * 2), 6)}


def test_a_group_pattern_matches_whole_module_names_only():
    pattern = group_pattern(("decoder.layers.*.ffn", "tgt_emb"))
    assert pattern.fullmatch("decoder.layers.11.ffn.inner.weight") and pattern.fullmatch("tgt_emb.weight")
    for name in ("decoder.layers.1.2.ffn.weight", "decoder.layers.1.ffnx.weight", "tgt_embx.weight", "xtgt_emb.weight",
                 "decoder_layers.1.ffn.weight"):
        assert not pattern.fullmatch(name), name


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


@pytest.mark.parametrize("strategy", ["flat", "serial"])
def test_a_multi_source_transformer_run_logs_its_encoders_too(tmp_path, strategy):
    from tests.data.test_multimodal import trained_multimodal

    root = trained_multimodal(tmp_path, "--diagnostics", "--log-every", 2, "--max-steps", 2, "--valid-every", 2,
                              model=["--arch", "multi-source-transformer", "--combination", strategy, "--d-model", 16,
                                     "--ffn-size", 32, "--heads", 2, "--enc-layers", 1, "--dec-layers", 1])
    records = [json.loads(line) for line in (root / "run" / "train.jsonl").read_text().splitlines()]
    d = next(r for r in records if r["type"] == "train")["diagnostics"]  # the weights were asked for
    for name in ("src", "image"):
        assert d[f"grad.encoder.{name}"] > 0 and d[f"context.{name}"] > 0 and d[f"states.{name}"] > 0
    assert d["grad.self_attention"] > 0 and d["grad.ffn"] > 0 and d["grad.norms"] > 0
    if strategy == "flat":
        assert d["grad.kv.src"] > 0 and d["grad.kv.image"] > 0 and d["grad.joint"] > 0
        assert abs(d["mass.src"] + d["mass.image"] - 1) < 1e-5
    else:
        assert d["grad.attention.src"] > 0 and d["grad.attention.image"] > 0 and not any(k.startswith("mass.") for k in d)


def test_only_models_whose_diagnostics_read_weights_compute_them(corpus_dir, tmp_path, monkeypatch):
    """The diagnosed pass asks for attention weights only where the model's statistics read them (the Transformers'
    weights take the slower explicit attention path)."""
    from contextlib import contextmanager

    from nmtkit.models.seq2seq import Seq2Seq
    from tests.conftest import run

    asked = []
    plain = Seq2Seq.attention_weights

    @contextmanager
    def spy(self, wanted):
        asked.append((type(self).__name__, wanted))
        with plain(self, wanted):
            yield

    monkeypatch.setattr(Seq2Seq, "attention_weights", spy)
    run(["train", "--data", corpus_dir, "--arch", "transformer", "--d-model", 16, "--ffn-size", 32, "--heads", 2,
         "--enc-layers", 1, "--dec-layers", 1, "--max-steps", 4, "--log-every", 2, "--valid-every", 4,
         "--diagnostics", "--save-dir", tmp_path / "run"])
    assert asked and ("Transformer", True) not in asked  # validation's search asks for none either
    assert Seq2Seq.diagnostics_read_weights is False
    from nmtkit.models.multi_source_transformer import MultiSourceTransformer

    assert MultiSourceTransformer.diagnostics_read_weights  # (its run asks: test_a_multi_source_transformer_run...)
