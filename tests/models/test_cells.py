"""Decoder cells: GRU and LSTM equal PyTorch's cells; the conditional GRU attends between its two transitions."""
import pytest
import torch

from nmtkit.models.cells import CELLS, ConditionalGRU, GRUCell, LSTMCell


def _attend_fixed(context):
    """An ``attend`` that records what it was asked and returns a fixed source context."""
    seen = {}

    def attend(s, query):
        seen.update(s=s, query=query)
        return {"source": context}, {"source": torch.ones(s.size(0), 1)}

    return attend, seen


@pytest.mark.parametrize("cls,reference", [(GRUCell, torch.nn.GRUCell), (LSTMCell, torch.nn.LSTMCell)])
def test_cells_equal_pytorch_cells_on_the_concatenated_input(cls, reference):
    """[E y; c] through the input and context maps is PyTorch's cell on the concatenation."""
    torch.manual_seed(0)
    cell = cls(5, {"embedding": 3}, {"source": 4}, query_size=2)
    ref = reference(7, 5)
    with torch.no_grad():
        ref.weight_ih.copy_(torch.cat([cell.inputs["embedding"].weight, cell.contexts["source"].weight], 1))
        ref.bias_ih.copy_(cell.inputs["embedding"].bias)
        ref.weight_hh.copy_(cell.hidden.weight[:cell.gate_size])
        ref.bias_hh.copy_(cell.hidden.bias[:cell.gate_size])
    emb, ctx, s0 = torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 5)
    attend, seen = _attend_fixed(ctx)
    state = cell.start(s0)
    new, contexts, _ = cell.step(cell.inputs["embedding"](emb), state, attend)
    expected = ref(torch.cat([emb, ctx], 1), s0 if cls is GRUCell else (s0, torch.zeros_like(s0)))  # (c_0 = 0)
    expected = expected if cls is GRUCell else expected[0]
    assert torch.allclose(new["hidden"], expected, atol=1e-6) and set(new) == set(cls.state_names)
    # the attention reads s_{j-1}, with the query W s_{j-1} computed in the recurrent product (Eq. 4)
    assert torch.equal(seen["s"], s0) and torch.allclose(seen["query"], cell.hidden(s0)[:, cell.gate_size:])


def test_conditional_gru_attends_from_its_first_transition():
    torch.manual_seed(0)
    cell = ConditionalGRU(5, {"embedding": 3}, {"source": 4})
    emb, ctx, s0 = torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 5)
    first, second = torch.nn.GRUCell(3, 5), torch.nn.GRUCell(4, 5)
    with torch.no_grad():
        first.weight_ih.copy_(cell.inputs["embedding"].weight)
        first.bias_ih.copy_(cell.inputs["embedding"].bias)
        first.weight_hh.copy_(cell.hidden.weight)
        first.bias_hh.copy_(cell.hidden.bias)
        second.weight_ih.copy_(cell.contexts["source"].weight)
        second.bias_ih.zero_()
        second.weight_hh.copy_(cell.hidden2.weight)
        second.bias_hh.copy_(cell.hidden2.bias)
    attend, seen = _attend_fixed(ctx)
    new, _, _ = cell.step(cell.inputs["embedding"](emb), cell.start(s0), attend)
    s1 = first(emb, s0)
    assert torch.allclose(seen["s"], s1, atol=1e-6) and seen["query"] is None  # s'_j, projected by the attention
    assert torch.allclose(new["hidden"], second(ctx, s1), atol=1e-6)
    with pytest.raises(ValueError, match="cannot fuse the query"):
        ConditionalGRU(5, {"embedding": 3}, {"source": 4}, query_size=2)


def test_every_cell_is_registered():
    assert set(CELLS) == {"gru", "lstm", "cgru"}


@pytest.mark.parametrize("cls", [GRUCell, LSTMCell, ConditionalGRU])
def test_the_first_input_s_map_carries_the_bias_and_the_others_none(cls):
    """(their biases would add up to one: more parameters, the same functions)"""
    cell = cls(5, {"embedding": 3, "extra": 2}, {"source": 4})
    assert cell.inputs["embedding"].bias is not None and cell.inputs["extra"].bias is None
