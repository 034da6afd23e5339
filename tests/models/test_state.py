import torch

from nmtkit.models.state import DecoderState


def test_reorder_selects_rows_of_every_tensor():
    s = DecoderState({"h": torch.arange(4.0).view(4, 1), "m": torch.arange(8.0).view(4, 2)}, static={"m"})
    r = s.reorder(torch.tensor([3, 0]))
    assert r["h"].flatten().tolist() == [3.0, 0.0]
    assert r["m"].tolist() == [[6.0, 7.0], [0.0, 1.0]]
    assert r.static == {"m"} and r.batch_size == 2


def test_reorder_within_sentences_keeps_static_tensors():
    memory = torch.tensor([[1.0], [1.0], [2.0], [2.0]])  # two sentences x two beams
    s = DecoderState({"h": torch.arange(4.0), "memory": memory}, static={"memory"})
    r = s.reorder(torch.tensor([1, 1, 3, 2]), within_sentences=True)
    assert r["memory"] is memory
    assert torch.equal(r["memory"], memory.index_select(0, torch.tensor([1, 1, 3, 2])))
    assert r["h"].tolist() == [1.0, 1.0, 3.0, 2.0]
    assert s.replace(h=torch.zeros(4)).static == {"memory"}
