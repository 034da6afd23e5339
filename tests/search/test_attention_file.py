"""Attention files read back as written; a damaged sentence (a part missing, attention of the wrong shape or not
finite) is one error naming the file and the sentence, not a traceback."""
import h5py
import numpy as np
import pytest

from nmtkit.errors import NmtkitError
from nmtkit.search.attention_file import AttentionFile, AttentionWriter


def write(path, attention):
    w = AttentionWriter(path, arch="rnnsearch")
    w.add(0, ["a", "b", "</s>"], ["x", "</s>"], {"source": np.array([[0.9, 0.1, 0.0], [0.1, 0.1, 0.8]])})
    w.add(1, ["c", "</s>"], ["y", "z", "</s>"], {"source": attention})
    w.close()


def test_sentences_read_back_as_written(tmp_path):
    write(tmp_path / "a.h5", np.full((3, 2), 0.5))
    with AttentionFile(tmp_path / "a.h5") as f:
        assert len(f) == 2 and f[0]["src_tokens"] == ["a", "b", "</s>"] and f[1]["tgt_tokens"] == ["y", "z", "</s>"]
        assert f[1]["attention"]["source"].shape == (3, 2)


def test_a_link_is_written_through_and_a_file_replaced_keeps_its_permissions(tmp_path):
    """(the link was replaced by a file, and the file it named left as it was)"""
    real = tmp_path / "real.h5"
    write(real, np.full((3, 2), 0.5))
    real.chmod(0o640)
    (tmp_path / "link.h5").symlink_to(real)
    write(tmp_path / "link.h5", np.full((3, 2), 0.25))
    assert (tmp_path / "link.h5").is_symlink() and (real.stat().st_mode & 0o777) == 0o640
    with AttentionFile(real) as f:
        assert f[1]["attention"]["source"][0, 0] == 0.25
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.h5", "real.h5"]


def test_a_token_holding_a_nul_character_is_written_with_its_symbol(tmp_path):
    """(HDF5's strings cannot hold NUL: a word of the training text with one crashed translate midway)"""
    w = AttentionWriter(tmp_path / "a.h5", arch="rnnsearch")
    w.add(0, ["eight\0nine", "</s>"], ["acht\0neun", "</s>"], {"source": np.full((2, 2), 0.5)},
          input_tokens={"mt": ["x\0", "</s>"]})
    w.close()
    with AttentionFile(tmp_path / "a.h5") as f:
        assert f[0]["src_tokens"] == ["eight\u2400nine", "</s>"] and f[0]["tgt_tokens"] == ["acht\u2400neun", "</s>"]
        assert f[0]["input_tokens"] == {"mt": ["x\u2400", "</s>"]}


def test_a_sentence_is_found_by_its_index_whatever_the_order_it_was_added_in(tmp_path):
    w = AttentionWriter(tmp_path / "a.h5", arch="rnnsearch")
    w.add(1, ["c", "</s>"], ["y", "</s>"], {"source": np.full((2, 2), 0.5)})
    w.add(0, ["a", "</s>"], ["x", "</s>"], {"source": np.full((2, 2), 0.5)})
    w.close()
    with AttentionFile(tmp_path / "a.h5") as f:
        assert len(f) == 2 and [f[k]["src_tokens"][0] for k in (0, 1)] == ["a", "c"]


@pytest.mark.parametrize("damage, message", [
    (lambda f: f.__delitem__("sentences/1/src_tokens"), "sentence 1 is incomplete or damaged"),
    (lambda f: f.__delitem__("sentences/1"), "sentence 1 is incomplete or damaged"),
    (lambda f: (f.__delitem__("sentences/1/attention/source"),
                f.create_dataset("sentences/1/attention/source", data=np.ones(6))),
     "sentence 1: its 'source' attention is [6], not [3 output tokens, 2]"),
    (lambda f: (f.__delitem__("sentences/1/attention/source"),
                f.create_dataset("sentences/1/attention/source", data=np.ones((3, 3)))),
     "sentence 1: its 'source' attention is [3, 3], not [3 output tokens, 2]"),
    (lambda f: f["sentences/1/attention/source"].__setitem__((0, 0), np.nan),
     "sentence 1: its 'source' attention is not finite"),
])
def test_a_damaged_sentence_is_one_error_naming_it(tmp_path, damage, message):
    write(tmp_path / "a.h5", np.full((3, 2), 0.5))
    with h5py.File(tmp_path / "a.h5", "a") as f:
        damage(f)
    with AttentionFile(tmp_path / "a.h5") as f:
        assert f[0]["tgt_tokens"] == ["x", "</s>"]  # the others still read
        with pytest.raises(NmtkitError) as e:
            f[1]
    assert str(e.value).startswith(f"{tmp_path / 'a.h5'}: {message}")
