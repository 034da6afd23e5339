"""Decoding in bf16 and int8: same interface, nearly the same scores, clear errors."""
import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.errors import NmtkitError
from nmtkit.inference import load_model
from nmtkit.search.precision import for_inference
from tests.conftest import run, unpack


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_reduced_precision_stays_close_to_fp32(trained_ckpt, precision):
    model, src_vocab, _ = unpack(load_model(trained_ckpt, torch.device("cpu")))
    src = make_batch([src_vocab.encode("seven hundred forty-two")])
    prev = torch.tensor([2])
    with torch.no_grad():
        ref, _, _ = model.decode_step(prev, model.encode(src))
        fast, arithmetic = for_inference(model, precision, torch.device("cpu"))
        with arithmetic:
            got, _, att = fast.decode_step(prev, fast.encode(src))
    assert got.dtype == torch.float32 and (got.exp().sum(-1) - 1).abs().max() < 1e-3
    assert (got - ref).abs().max() < 0.2 and got.argmax() == ref.argmax()
    if precision == "int8":
        assert "DynamicQuantizedLinear" in repr(fast)


def test_cli_and_errors(trained_ckpt):
    for precision in ("bf16", "int8"):
        r = run(["translate", "-m", trained_ckpt, "--precision", precision], input="forty-two\n\none\n")
        assert len(r.stdout.split("\n")) == 4
    with pytest.raises(NmtkitError, match="int8 runs on the CPU only"):
        for_inference(torch.nn.Linear(2, 2), "int8", torch.device("cuda"))
    r = run(["translate", "-m", trained_ckpt, "--precision", "fp8"], input="one\n", ok=False)
    assert "'fp8' is not one of" in r.stderr
