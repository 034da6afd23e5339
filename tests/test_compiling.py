"""``train --compile`` compiles the model once for batches of every shape, for every registered architecture that
says it does (``Seq2Seq.compiles_once``): no size that happens to be equal between two inputs, and no table the
model grows, becomes a guard that later batches break (each a recompilation, minutes on a GPU)."""
import pytest
import torch
import torch._inductor.config as inductor_config
import torch.fx.experimental._config as shape_config

from nmtkit.compiling import compiled
from nmtkit.models.registry import model_names
from tests.models import test_multi_source as inputs
from tests.models.test_contract import tiny

# lengths of (src, mt, image grid, target) per batch; in the first the text inputs' widths and the target's are
# equal (7, with the sources' EOS and the target's BOS)
SHAPES = [((6, 2, 5), (3, 6, 1), (4, 4, 4), (6, 2, 1)), ((9, 4), (2, 2), (5, 3), (3, 2)),
          ((3, 8, 8, 2), (7, 1, 1, 3), (2, 2, 2, 2), (12, 5, 1, 7))]
ONCE = [arch for arch in model_names() if tiny(arch).compiles_once]


@pytest.fixture(autouse=True)
def pytorch_defaults(monkeypatch):
    """PyTorch's own settings, which compiled() changes, restored after each test."""
    monkeypatch.setattr(shape_config, "use_duck_shape", True)
    monkeypatch.setattr(inductor_config, "shape_padding", True)
    monkeypatch.setattr(inductor_config.triton, "mix_order_reduction", True)


def test_inductor_makes_no_choice_by_a_batch_size(graphs):
    # (Inductor's own guards: the eager backend of the test below does not exercise them; an H200 did, issue 33)
    compiled(torch.nn.Linear(2, 2), backend=graphs[1])
    assert inductor_config.shape_padding is False and inductor_config.triton.mix_order_reduction is False


def test_the_transformers_compile_once():
    assert {"transformer", "multi-source-transformer"} <= set(ONCE)


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
@pytest.mark.parametrize("arch", ONCE)
def test_a_model_that_compiles_once_does_for_batches_of_every_shape(graphs, arch, positions):
    made, backend = graphs
    net = compiled(tiny(arch, positions=positions).train(), backend=backend)
    for lengths in SHAPES:
        batch = inputs.batch(lengths)
        out = net(batch)
        assert out.logits.shape[:2] == batch.tgt_out.shape
        out.logits.float().logsumexp(-1).mean().backward()
    assert len(made) == 1, f"{len(made)} compilations for {len(SHAPES)} batch shapes"
