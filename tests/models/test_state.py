import pytest
import torch

from nmtkit.models.state import PENDING, START, DecoderState, target_mask


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


def test_merged_pads_inputs_on_the_right_and_growing_tensors_on_the_left():
    # a: two rows two steps in, sources of 3 positions; b: one row one step in, a source of 4; "mem" grows along
    # dimension 1 of 3 (a target memory), "kv" along dimension 2 of 4 (a Transformer's cache, [B, heads, T, d])
    a = DecoderState({"mask": torch.tensor([[True, True, True], [True, True, False]]), "mem": torch.ones(2, 2, 1),
                      "kv": torch.ones(2, 2, 2, 1), "h": torch.zeros(2, 1)}, static={"mask"}, grows={"mem", "kv"})
    b = DecoderState({"mask": torch.ones(1, 4, dtype=torch.bool), "mem": torch.full((1, 1, 1), 5.0),
                      "kv": torch.full((1, 2, 1, 1), 5.0), "h": torch.ones(1, 1)}, static={"mask"}, grows={"mem", "kv"})
    m = DecoderState.merged([a, b])
    assert m.batch_size == 3 and m.static == {"mask"} and m.grows == {"mem", "kv"}
    assert m["mask"].tolist() == [[True, True, True, False], [True, True, False, False], [True] * 4]
    assert m["mem"][:, :, 0].tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 5.0]]
    assert m["kv"].shape == (3, 2, 2, 1) and m["kv"][:, 1, :, 0].tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 5.0]]
    assert m[START].tolist() == [0, 0, 1]
    assert target_mask(m, 2).tolist() == [[True, True], [True, True], [False, True]]
    assert target_mask(a, 2) is None
    # once the rows that owned the first position have left, merging again (with a row at its first step) drops it
    fresh = DecoderState({"mask": torch.ones(1, 2, dtype=torch.bool), "mem": torch.zeros(1, 0, 1),
                          "kv": torch.zeros(1, 2, 0, 1), "h": torch.ones(1, 1)}, static={"mask"}, grows={"mem", "kv"})
    again = DecoderState.merged([m.reorder(torch.tensor([2])), fresh])
    assert again["mem"][:, :, 0].tolist() == [[5.0], [0.0]]
    assert again["kv"][:, 0, :, 0].tolist() == [[5.0], [0.0]]
    assert again[START].tolist() == [0, 1]


def test_merged_refuses_states_of_different_decoders():
    with pytest.raises(ValueError, match="do not merge"):
        DecoderState.merged([DecoderState({"h": torch.zeros(1, 1)}), DecoderState({"c": torch.zeros(1, 1)})])


def test_rows_are_grouped_by_sentence_where_the_reordering_caller_says_so():
    s = DecoderState({"h": torch.arange(4.0), "m": torch.tensor([1.0, 1.0, 2.0, 2.0])}, static={"m"})
    g = s.reorder(torch.tensor([1, 1, 3, 2]), within_sentences=True, beams=2)
    assert s.beams == 1 and g.beams == 2
    assert g.replace(h=torch.zeros(4)).beams == 2 and g.trimmed().beams == 2
    assert g.reorder(torch.tensor([2, 3])).beams == 1  # (each reorder says again what holds)
    assert g.reorder(torch.tensor([1, 0]), within_sentences=True).beams == 1
    assert DecoderState.merged([g, g]).beams == 2 and DecoderState.merged([g, s]).beams == 1


def test_shared_tensors_hold_one_row_a_sentence_through_reorders_and_merges():
    s = DecoderState({"h": torch.arange(2.0), "kv": torch.tensor([[10.0], [20.0]])}, shared={"kv"})
    assert s.static == {"kv"} and s.batch_size == 2
    beam = s.reorder(torch.tensor([0, 0, 0, 1, 1, 1]), beams=3)  # (a beam search starts: 3 rows a sentence)
    assert beam.batch_size == 6 and beam["kv"].tolist() == [[10.0], [20.0]]
    assert beam.per_sentence("kv").tolist() == [[10.0], [20.0]] and beam.per_sentence("h").tolist() == [0.0, 1.0]
    step = beam.reorder(torch.tensor([1, 0, 0, 5, 3, 4]), within_sentences=True, beams=3)
    assert step["kv"] is beam["kv"] and step.replace(h=torch.zeros(6)).shared == {"kv"}
    left = step.reorder(torch.tensor([3, 5, 4]), beams=3)  # (the first sentence is done: it leaves)
    assert left["kv"].tolist() == [[20.0]] and left.batch_size == 3
    rows = step.reorder(torch.tensor([4, 0]))  # (rows not grouped by sentence: each its own row)
    assert rows.beams == 1 and rows["kv"].tolist() == [[20.0], [10.0]] and rows.per_sentence("kv") is rows["kv"]
    merged = DecoderState.merged([left, beam])
    assert merged.beams == 3 and merged["kv"].tolist() == [[20.0], [10.0], [20.0]] and merged.batch_size == 9
    mixed = DecoderState.merged([rows, left])
    assert mixed.beams == 1 and mixed["kv"].tolist() == [[20.0], [10.0], [20.0], [20.0], [20.0]]


def _deferred(deferred=("kv",)):
    """Four rows: a cache ``kv [4, 2, 3, 1]`` (each row's value its number, by position) deferred or not, a hidden
    state ``h``."""
    kv = torch.arange(4.0).view(4, 1, 1, 1) * 10 + torch.arange(3.0).view(1, 1, 3, 1)
    return DecoderState({"kv": kv.expand(4, 2, 3, 1).contiguous(), "h": torch.arange(4.0)}, grows={"kv"},
                        deferred=deferred)


def test_deferred_tensors_take_the_rows_of_every_reorder_as_the_next_position_is_appended():
    index, again = torch.tensor([2, 0, 0, 3]), torch.tensor([1, 3, 0])  # (rows repeated and dropped, twice)
    eager, state = _deferred(()).reorder(index).reorder(again), _deferred()
    lazy = state.reorder(index).reorder(again)
    assert lazy["kv"] is state["kv"]  # (not copied: its rows recorded)
    assert lazy[PENDING].tolist() == [0, 3, 2] and lazy.batch_size == eager.batch_size == 3
    assert torch.equal(lazy["h"], eager["h"])
    new = torch.full((3, 2, 1, 1), -1.0)
    grown = lazy.grown("kv", new)
    assert torch.equal(grown, torch.cat([eager["kv"], new], 2)) and torch.equal(grown, eager.grown("kv", new))
    stepped = lazy.stepped(kv=grown, h=lazy["h"] + 1)
    assert PENDING not in stepped and stepped.deferred == {"kv"} and torch.equal(stepped["kv"], grown)
    settled = lazy.settled()
    assert PENDING not in settled and torch.equal(settled["kv"], eager["kv"])
    with pytest.raises(ValueError, match="kv"):  # (a step that kept the old rows would lose the recorded ones)
        lazy.stepped(h=lazy["h"])


def test_merged_takes_the_recorded_rows_of_deferred_tensors_first():
    a, b = _deferred().reorder(torch.tensor([3, 1])), _deferred().reorder(torch.tensor([2]))
    m = DecoderState.merged([a, b])
    assert PENDING not in m and m["kv"][:, 0, :, 0].tolist() == [[30, 31, 32], [10, 11, 12], [20, 21, 22]]


def test_trimming_drops_only_the_positions_before_every_row_s_own():
    """The leading positions no row owns go; a row that owns from position 0 keeps the whole memory."""
    mem = torch.arange(4.0).view(1, 4, 1).repeat(2, 1, 1)
    s = DecoderState({"mem": mem, START: torch.tensor([0, 2])}, grows={"mem"})
    assert s.trimmed()["mem"] is mem and s.trimmed()[START].tolist() == [0, 2]
    late = DecoderState({"mem": mem, START: torch.tensor([3, 1])}, grows={"mem"}).trimmed()
    assert late["mem"][0, :, 0].tolist() == [1.0, 2.0, 3.0] and late[START].tolist() == [2, 0]


def test_a_row_keeps_its_positions_through_two_joins():
    """A row three steps in, joined by one at its first step, then by another: each keeps all its positions."""
    def row(steps, value):
        return DecoderState({"mem": torch.full((1, steps, 1), value), "h": torch.zeros(1, 1)}, grows={"mem"})

    m = DecoderState.merged([row(3, 1.0), row(0, 2.0)])
    grown = m.replace(mem=torch.cat([m["mem"], torch.tensor([[[1.0]], [[2.0]]])], 1))  # (a step: one each)
    again = DecoderState.merged([grown, row(1, 3.0)])
    steps = again["mem"].size(1)
    own = target_mask(again, steps)
    assert [again["mem"][k, own[k], 0].tolist() for k in range(3)] == [[1.0] * 4, [2.0], [3.0]]
