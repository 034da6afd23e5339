import pytest
import torch

from nmtkit.models.encoder import RNNEncoder


@pytest.mark.parametrize("cell,bidirectional", [("gru", True), ("lstm", True), ("lstm", False)])
def test_final_states_are_the_last_real_states_of_each_direction(cell, bidirectional):
    torch.manual_seed(0)
    enc = RNNEncoder(5, 4, layers=2, cell=cell, bidirectional=bidirectional)
    x, lengths = torch.randn(3, 6, 5), torch.tensor([6, 2, 4])
    memory, mask, final = enc(x, lengths)
    h = final[0] if cell == "lstm" else final
    assert memory.shape == (3, 6, enc.output_size) and h.shape == (2, 3, enc.output_size)
    assert (memory[~mask] == 0).all()
    for b, n in enumerate(lengths.tolist()):
        assert torch.allclose(h[-1, b, :4], memory[b, n - 1, :4], atol=1e-6)  # forward: last real token
        if bidirectional:
            assert torch.allclose(h[-1, b, 4:], memory[b, 0, 4:], atol=1e-6)  # backward: first token
