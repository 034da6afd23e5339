"""Checkpoint files: atomic writes, safe loading, clear errors, and format 1 (nmtkit 0.1.0) read as format 2."""
import os
from pathlib import Path

import h5py
import pytest
import torch

from nmtkit.checkpoint import first_mismatch, kept_checkpoints, load_checkpoint, save_checkpoint
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import WordVocab
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from tests.conftest import TINY_CONFIG

# parameter names of a bitatt-rnn and a luong model of nmtkit 0.1.0 (checkpoint format 1)
OLD_NAMES = {
    "bitatt-rnn": [f"{d}.{m}" for d in ("decoder", "reverse") for m in (
        "attention.key.bias", "attention.key.weight", "attention.v.weight", "ctx_gates.weight", "emb_gates.bias",
        "emb_gates.weight", "hidden_proj.bias", "hidden_proj.weight", "init_state.bias", "init_state.weight",
        "output.bias", "output.weight", "readout.bias", "readout.weight", "target_attention.key.bias",
        "target_attention.key.weight", "target_attention.query.weight", "target_attention.v.weight",
        "target_gates.weight", "target_readout.weight")]
    + ["decoder.extra_gates.weight", "decoder.extra_readout.weight", "src_emb.weight", "tgt_emb.weight"]
    + [f"encoder.rnn.{k}_{w}_l0{r}" for k in ("bias", "weight") for w in ("hh", "ih") for r in ("", "_reverse")],
    "luong": ["attention.w_a.weight", "bridge_c.bias", "bridge_c.weight", "bridge_h.bias", "bridge_h.weight",
              "combine.weight", "decoder.bias_hh_l0", "decoder.bias_ih_l0", "decoder.weight_hh_l0",
              "decoder.weight_ih_l0", "output.bias", "output.weight", "src_emb.weight", "tgt_emb.weight"]
    + [f"encoder.rnn.{k}_{w}_l0{r}" for k in ("bias", "weight") for w in ("hh", "ih") for r in ("", "_reverse")],
}


def test_round_trip_and_weights_only(tmp_path):
    save_checkpoint(tmp_path / "c.pt", {"model": {"w": torch.ones(2)}, "config": {"arch": "x"}})
    ckpt = load_checkpoint(tmp_path / "c.pt")
    assert torch.equal(ckpt["model"]["w"], torch.ones(2)) and ckpt["format"] == 2


def test_a_checkpoint_is_on_disk_before_it_takes_its_name(tmp_path, monkeypatch):
    """Its bytes are synced (fsync) while the name still holds the previous checkpoint: a power cut after the rename
    cannot leave an empty or partial file under the name of a good one."""
    path = tmp_path / "c.pt"
    save_checkpoint(path, {"model": {"w": torch.ones(2)}, "config": {"arch": "x"}})
    before, synced = path.read_bytes(), []
    sync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append((os.fstat(fd).st_size, path.read_bytes())) or sync(fd))
    save_checkpoint(path, {"model": {"w": torch.zeros(300)}, "config": {"arch": "x"}})
    assert synced == [(path.stat().st_size, before)] and path.read_bytes() != before


def test_a_failed_save_keeps_the_previous_checkpoint(tmp_path):
    save_checkpoint(tmp_path / "c.pt", {"model": {"w": torch.ones(2)}, "config": {"arch": "x"}})

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("cannot save")

    with pytest.raises(RuntimeError):
        save_checkpoint(tmp_path / "c.pt", {"model": {"w": Unpicklable()}})
    assert torch.equal(load_checkpoint(tmp_path / "c.pt")["model"]["w"], torch.ones(2))
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def test_broken_or_foreign_files_are_clear_errors(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(NmtkitError, match="junk.pt: not a readable nmtkit checkpoint"):
        load_checkpoint(tmp_path / "junk.pt")
    torch.save({"something": 1}, tmp_path / "other.pt")
    with pytest.raises(NmtkitError, match="not an nmtkit checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(NmtkitError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "missing.pt")


def test_changed_bytes_of_a_weight_are_found_by_the_archive_s_checksums(tmp_path):
    """(``torch.load`` read them as other weights: a resumed run trained on, a translation decoded with them.)"""
    import struct
    import zipfile

    save_checkpoint(tmp_path / "c.pt", {"model": {"w": torch.arange(64.0)}, "config": {"arch": "x"}})
    member = next(m for m in zipfile.ZipFile(tmp_path / "c.pt").infolist() if "/data/" in m.filename)
    data = bytearray((tmp_path / "c.pt").read_bytes())
    name, extra = struct.unpack("<HH", data[member.header_offset + 26:member.header_offset + 30])  # (local header)
    start = member.header_offset + 30 + name + extra + 4  # (the weight 1.0 on)
    data[start:start + 16] = bytes(16)
    (tmp_path / "c.pt").write_bytes(bytes(data))
    with pytest.raises(NmtkitError, match=rf"c.pt: damaged: its {member.filename} does not match the checksum"):
        load_checkpoint(tmp_path / "c.pt")
    (tmp_path / "d.pt").mkdir()
    with pytest.raises(NmtkitError, match="d.pt: a folder, not a checkpoint"):
        load_checkpoint(tmp_path / "d.pt")


@pytest.mark.parametrize("arch", sorted(OLD_NAMES))
def test_a_format_1_checkpoint_loads_with_its_parameters_renamed(arch, tmp_path):
    config = {**TINY_CONFIG, "arch": arch, "layers": 1}
    model = build_model(config, CorpusMeta.text(10, 12))
    old = dict(zip(OLD_NAMES[arch], [torch.full((1,), float(i)) for i in range(len(OLD_NAMES[arch]))]))
    vocab = lambda n: WordVocab([f"w{i}" for i in range(n - 4)]).state()
    save_checkpoint(tmp_path / "old.pt", {"model": old, "config": config, "vocab": {"src": vocab(10), "tgt": vocab(12)},
                                          "schedule": {"lr": 0.5, "last": 3.0, "best": 4.0, "bad": 1}})
    torch.save({**torch.load(tmp_path / "old.pt", weights_only=True), "format": 1}, tmp_path / "old.pt")
    ckpt = load_checkpoint(tmp_path / "old.pt")
    assert sorted(ckpt["model"]) == sorted(model.state_dict())  # every old name maps onto a parameter
    assert [float(v) for v in ckpt["model"].values()] == list(range(len(old)))  # and keeps its tensor
    assert CorpusMeta.from_state(ckpt["corpus"]) == CorpusMeta.text(10, 12)
    assert ckpt["schedule"] == {"lr": 0.5, "last": 3.0} and ckpt["stopping"] == {"best": 4.0, "bad": 1}


class Pickled:
    """An object whose unpickling would run code from the file."""


def test_unreadable_checkpoints_get_one_line_naming_the_file_and_the_problem(tmp_path, trained_ckpt):
    from nmtkit.inference import load_model

    (tmp_path / "zero.pt").write_bytes(b"")
    with pytest.raises(NmtkitError, match=r"zero.pt: not a readable nmtkit checkpoint \(the file is empty or cut short\)"):
        load_checkpoint(tmp_path / "zero.pt")
    torch.save({"format": 2, "model": {}, "x": Pickled()}, tmp_path / "code.pt")
    with pytest.raises(NmtkitError) as e:
        load_checkpoint(tmp_path / "code.pt")
    assert "runs no code from a checkpoint" in str(e.value) and "weights_only" not in str(e.value)
    assert "can still be loaded" not in str(e.value) and "\n" not in str(e.value)
    ckpt = torch.load(trained_ckpt, weights_only=True)
    torch.save({k: v for k, v in ckpt.items() if k != "vocab"}, tmp_path / "novocab.pt")
    with pytest.raises(NmtkitError, match="novocab.pt: an incomplete nmtkit checkpoint \\(no vocab\\)"):
        load_model(tmp_path / "novocab.pt")
    (tmp_path / "cut.pt").write_bytes(Path(trained_ckpt).read_bytes()[:5000])
    with pytest.raises(NmtkitError, match=r"cut.pt: not a readable nmtkit checkpoint \(a PyTorch file cut short or "
                                          r"damaged: "):
        load_checkpoint(tmp_path / "cut.pt")
    with h5py.File(tmp_path / "shard.h5", "w") as f:
        f["x"] = [1]
    with pytest.raises(NmtkitError, match=r"shard.h5: not a readable nmtkit checkpoint \(it is an HDF5 file, "):
        load_checkpoint(tmp_path / "shard.h5")
    torch.save({**ckpt, "config": {**ckpt["config"], "arch": "future-net"}}, tmp_path / "future.pt")
    with pytest.raises(NmtkitError, match=r"future.pt: a model of architecture 'future-net', which this nmtkit "):
        load_model(tmp_path / "future.pt")
    torch.save({**ckpt, "config": {**ckpt["config"], "dec_size": 20}}, tmp_path / "resized.pt")
    with pytest.raises(NmtkitError, match=r"resized.pt: the weights do not fit .*: decoder.init_state.weight is "
                                          r"\(48, 64\) there and \(20, 64\) in the configured model"):
        load_model(tmp_path / "resized.pt")


def test_a_runs_step_checkpoints_are_its_step_n_files_in_the_order_of_their_steps(tmp_path):
    """(pruning removes the oldest: by name, step-10.pt came before step-9.pt; a user's step-4.pt.bak is not one)"""
    for name in ("step-100.pt", "step-9.pt", "step-10.pt", "step-4.pt.bak", "step-4.ptx", "best.pt", "step-x.pt"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in kept_checkpoints(tmp_path)] == ["step-9.pt", "step-10.pt", "step-100.pt"]


def test_a_parameter_of_another_shape_is_a_mismatch_even_of_as_many_values():
    expected = {"w": torch.zeros(3, 4), "b": torch.zeros(4)}
    assert first_mismatch(expected, {"w": torch.zeros(3, 4), "b": torch.zeros(4)}) == ""
    assert first_mismatch(expected, {"w": torch.zeros(4, 3), "b": torch.zeros(4)}) == \
        "w is (4, 3) there and (3, 4) in the configured model"
