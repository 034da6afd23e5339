import pytest
import torch

from nmtkit.data.batching import Stream
from nmtkit.models.encoder import FeatureEncoder, RNNEncoder


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


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_the_dropout_between_stacked_layers_is_off_in_eval_mode(cell):
    """Encoding twice in eval mode gives one memory, that of PyTorch's own module (packed sequences), whose dropout
    between layers is off in eval mode too."""
    torch.manual_seed(0)
    enc = RNNEncoder(5, 4, layers=2, cell=cell, dropout=0.5).eval()
    x, lengths = torch.randn(3, 6, 5), torch.tensor([6, 2, 4])
    memory, mask, _ = enc(x, lengths)
    torch.testing.assert_close(enc(x, lengths)[0], memory, rtol=0, atol=0)
    torch.testing.assert_close(enc.packed(x, mask, lengths)[0], memory, rtol=1e-5, atol=1e-6)
    assert not torch.equal(enc.train()(x, lengths)[0], memory)  # (in training, it is on)


def test_image_states_are_zeros_at_padding_in_training_too():
    torch.manual_seed(0)
    enc = FeatureEncoder(6, 4, dropout=0.3).train()
    stream = Stream(torch.randn(2, 5, 6), torch.tensor([5, 3]))
    memory, mask, _ = enc.encode(stream)
    assert mask.tolist() == [[True] * 5, [True] * 3 + [False] * 2]
    assert (memory[~mask] == 0).all() and (memory[mask] != 0).any()
