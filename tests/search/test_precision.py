"""Decoding in bf16 and int8: same interface, nearly the same scores, clear errors; fp32 on CPUs with packed linear
layers: the same results."""
import copy

import pytest
import torch

from nmtkit.data.batching import make_batch
from nmtkit.errors import NmtkitError
from nmtkit.inference import load_model
from nmtkit.models import model_names
from nmtkit.search import precision
from nmtkit.search.beam import beam_search
from nmtkit.search.precision import PackedLinear, for_inference, packable
from tests.conftest import run, unpack
from tests.models import test_multi_source as inputs
from tests.models.decoding import step_by_step
from tests.models.test_contract import tiny
from tests.models.test_transformer import batch, model

needs_packing = pytest.mark.skipif(not packable(), reason="this PyTorch has no oneDNN packed linear kernels")


@pytest.fixture
def products(monkeypatch):
    """The rows of each product through a packed weight, as they happen."""
    rows = []

    def counted(x, packed, bias):
        rows.append(x.numel() // x.size(-1))
        return product(x, packed, bias)
    product = precision.packed_product
    monkeypatch.setattr(precision, "packed_product", counted)
    return rows


@needs_packing
@pytest.mark.parametrize("bias", [True, False])
def test_a_packed_linear_layer_computes_the_plain_one(bias, products, monkeypatch):
    monkeypatch.setattr(PackedLinear, "FROM_ROWS", ((0, 2),))  # (a layer this small would not be packed)
    torch.manual_seed(0)
    plain = torch.nn.Linear(24, 40, bias=bias)
    packed = PackedLinear(plain.weight, plain.bias)
    assert packed.weight is plain.weight and packed.bias is plain.bias
    with torch.no_grad():
        for shape in [(1, 24), (5, 24), (3, 7, 24), (600, 24)]:  # one row and many go the plain way
            x = torch.randn(shape)
            torch.testing.assert_close(packed(x), plain(x), atol=1e-5, rtol=1e-5)
    assert products == [5, 21]


@needs_packing
def test_layers_are_packed_by_size_and_multiply_packed_from_the_rows_where_it_pays(products):
    layers = torch.nn.ModuleDict({"small": torch.nn.Linear(256, 256), "middle": torch.nn.Linear(256, 768),
                                  "output": torch.nn.Linear(256, 8001), "vector": torch.nn.Linear(256, 1)})
    fast, _ = for_inference(layers, "fp32", torch.device("cpu"))
    assert [name for name, layer in fast.items() if isinstance(layer, PackedLinear)] == ["middle", "output"]
    with torch.no_grad():
        for rows in (1, 4, 5, 15, 16, 512, 513):
            products.clear()
            fast["middle"](torch.randn(rows, 256))
            fast["output"](torch.randn(rows, 256))
            assert products == [rows] * ((16 <= rows <= 512) + (5 <= rows <= 512)), rows


@needs_packing
def test_for_a_compiled_step_every_layer_multiplies_packed_through_one_operator_and_its_one_copy(products, graphs):
    # (the operator chooses by the rows as it runs: one graph for every size)
    made, backend = graphs
    layers = torch.nn.ModuleDict({"small": torch.nn.Linear(24, 40), "vector": torch.nn.Linear(24, 1)})
    fast, _ = for_inference(copy.deepcopy(layers), "fp32", torch.device("cpu"), compiled=True)
    small = fast["small"]
    assert isinstance(small, PackedLinear) and small.every and type(fast["vector"]) is torch.nn.Linear
    step = torch.compile(lambda x: torch.relu(small(x)), backend=backend, dynamic=True)
    with torch.no_grad():
        for rows in (7, 513, 40):
            x = torch.randn(rows, 24)
            torch.testing.assert_close(step(x), torch.relu(layers["small"](x)), atol=1e-5, rtol=1e-5)
        small(torch.randn(40, 24))  # (uncompiled, by the rule by size: this one never packed)
    assert products == [7, 40]
    assert len(made) == 1 and "nmtkit.packed_linear" in made[0].code


@needs_packing
def test_fp32_decoding_on_cpus_packs_the_linear_layers_and_finds_the_same_hypotheses(products, monkeypatch):
    monkeypatch.setattr(PackedLinear, "FROM_ROWS", ((0, 2),))  # (every layer of a tiny model, from 2 rows)
    m, b = model(), batch()
    fast, _ = for_inference(copy.deepcopy(m), "fp32", torch.device("cpu"))
    packed = [name for name, layer in fast.named_modules() if isinstance(layer, PackedLinear)]
    assert "output" in packed and "decoder.layers.0.ffn.inner" in packed
    assert fast.output.weight is fast.tgt_emb.weight  # ties survive
    with torch.no_grad():
        for x, y in zip(beam_search(m, b, beam_size=3, n_best=3), beam_search(fast, b, beam_size=3, n_best=3)):
            assert [h.tokens for h in x] == [h.tokens for h in y]
            assert [h.score for h in x] == pytest.approx([h.score for h in y], abs=1e-4)
    assert products


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_reduced_precision_stays_close_to_fp32(trained_ckpt, precision):
    model, src_vocab, _ = unpack(load_model(trained_ckpt, torch.device("cpu")))
    src = make_batch([src_vocab.encode("seven hundred forty-two")])
    prev = torch.tensor([2])
    with torch.no_grad():
        ref, _, _ = model.decode_step(prev, model.encode(src))
        fast, arithmetic = for_inference(model, precision, torch.device("cpu"))
        with arithmetic():
            got, _, att = fast.decode_step(prev, fast.encode(src))
    assert got.dtype == torch.float32 and (got.exp().sum(-1) - 1).abs().max() < 1e-3
    assert (got - ref).abs().max() < 0.2 and got.argmax() == ref.argmax()


@pytest.mark.parametrize("arch", model_names())
def test_int8_quantises_every_matrix_layer_the_output_layer_included(arch):
    m = tiny(arch, param_init=0.1)
    fast, _ = for_inference(copy.deepcopy(m), "int8", torch.device("cpu"))
    linears = {name: layer for name, layer in m.named_modules() if type(layer) is torch.nn.Linear}
    outputs = [name for name, layer in linears.items() if layer.out_features == inputs.V_TGT]
    assert outputs, "the output layer is an nn.Linear"
    for name, layer in linears.items():
        got = fast.get_submodule(name)
        if layer.out_features == 1:  # vector products (attention's v) stay plain
            assert type(got) is torch.nn.Linear, name
            continue
        assert type(got) is torch.ao.nn.quantized.dynamic.Linear and got.weight().dtype == torch.qint8, name
        weight = layer.weight.detach()
        torch.testing.assert_close(got.weight().dequantize(), weight, atol=float(weight.abs().max()) / 100, rtol=0)
    b = inputs.batch()
    with torch.no_grad():  # decoding step by step, as translate does, runs and stays close to fp32
        want, got = step_by_step(m, b)[0], step_by_step(fast, b)[0]
    real = b.tgt_out != 0
    assert got.shape == want.shape and (got[real] - want[real]).abs().max() < 0.1


def test_cli_and_errors(trained_ckpt):
    for arithmetic in ("bf16", "int8"):
        r = run(["translate", "-m", trained_ckpt, "--precision", arithmetic], input="forty-two\n\none\n")
        assert len(r.stdout.split("\n")) == 4
    with pytest.raises(NmtkitError, match="int8 runs on the CPU only"):
        for_inference(torch.nn.Linear(2, 2), "int8", torch.device("cuda"))
    r = run(["translate", "-m", trained_ckpt, "--precision", "fp8"], input="one\n", ok=False)
    assert "'fp8' is not one of" in r.stderr


def test_bf16_decodes_under_bfloat16_autocast():
    """(float16 would pass the closeness test above on a CPU, and overflow where bfloat16 does not)"""
    m = tiny("rnnsearch")
    ready, context = for_inference(m, "bf16", torch.device("cpu"))
    assert ready is m
    with context():
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")
